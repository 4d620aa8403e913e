-- Commits a batch of an owner's writes, in order, fenced by its epoch: an
-- instance whose epoch is not the session's current one writes nothing.
-- KEYS[1] the session's epoch key (it names the slot)
-- ARGV: base, epoch, now (ms), keep events, max events, retention (ms),
--       max bytes, session ttl (ms), then one group of four per write:
--   'a', stream, index ('*': the stream's head), data   append an event
--   'o', stream, request id (JSON), ''                  a call is open
--   'f', stream, '', ''                                 the call is answered
-- Returns {-4, 0, 0, 0} when the session was deleted, {-3, 0, 0, 0} when
-- Redis no longer knows it (lost data: the owner seeds it again),
-- {-1, current epoch, 0, 0} when fenced, else {0, index of the last append
-- (or -1), holes found, then the stream of each append dropped because its
-- stream was answered}.
local base = ARGV[1]
if redis.call('EXISTS', base .. 'gone') == 1 then
  return {-4, 0, 0, 0}
end
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current == 0 then
  return {-3, 0, 0, 0}
end
if current ~= tonumber(ARGV[2]) then
  return {-1, current, 0, 0}
end
local now, keep, max = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local retention, max_bytes, ttl = tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
local open = base .. 'open'
local last, dropped, holes = -1, {}, 0

local function first_index(stream)
  if stream == 's' then return 1 end
  return 0
end

local function trim(key, head, floor, bytes)
  -- Oldest first while the window says so; the newest event always stays,
  -- and one append evicts a bounded number.
  local budget = 256
  while head - floor > 1 and budget > 0 do
    local oldest = redis.call('XRANGE', key, floor .. '-1', floor .. '-1')[1]
    if oldest == nil then
      floor = floor + 1
    else
      local count = head - floor
      local aged = count > keep and tonumber(oldest[2][4]) + retention < now
      if not (count > max or bytes > max_bytes or aged) then
        break
      end
      redis.call('XDEL', key, oldest[1])
      bytes = bytes - tonumber(oldest[2][6])
      floor = floor + 1
    end
    budget = budget - 1
  end
  return floor, bytes
end

local function append(stream, at, data)
  local meta, key = base .. 'm:' .. stream, base .. 'x:' .. stream
  local fields = redis.call('HMGET', meta, 'head', 'floor', 'bytes', 'finished')
  local head = tonumber(fields[1] or first_index(stream))
  if at ~= '*' and tonumber(at) < head then
    -- Committed by an earlier try of this batch.
    return
  end
  if fields[4] == '1' then
    -- A late write behind its stream's answer: nobody can read it, so it
    -- is not kept, and the owner must not send it either.
    dropped[#dropped + 1] = stream
    return
  end
  local floor = tonumber(fields[2] or first_index(stream))
  local bytes = tonumber(fields[3] or '0')
  local index = head
  if at ~= '*' then
    index = tonumber(at)
    if index > head or fields[1] == nil then
      -- Redis lost events this owner committed (a restart without
      -- persistence, a failover to a lagging replica): what it still holds
      -- of the stream goes, and the floor says where the events start again.
      if index > floor and (fields[1] ~= nil or index > first_index(stream)) then
        holes = holes + 1
      end
      redis.call('DEL', key)
      floor, bytes = index, 0
    end
  end
  local weight = string.len(data) + 32
  redis.call('XADD', key, index .. '-1', 'd', data, 't', now, 'w', weight)
  bytes = bytes + weight
  head = index + 1
  floor, bytes = trim(key, head, floor, bytes)
  redis.call('HSET', meta, 'head', head, 'floor', floor, 'bytes', bytes)
  redis.call('PEXPIRE', meta, ttl)
  redis.call('PEXPIRE', key, ttl)
  last = index
end

for i = 9, #ARGV, 4 do
  local kind, stream = ARGV[i], ARGV[i + 1]
  if kind == 'a' then
    append(stream, ARGV[i + 2], ARGV[i + 3])
  elseif kind == 'o' then
    local meta = base .. 'm:' .. stream
    if redis.call('HGET', meta, 'finished') ~= '1' then
      redis.call('HSETNX', meta, 'head', 0)
      redis.call('HSETNX', meta, 'floor', 0)
      redis.call('HSET', open, stream, ARGV[i + 2])
      redis.call('PEXPIRE', meta, ttl)
      redis.call('PEXPIRE', base .. 'x:' .. stream, ttl)
      redis.call('PEXPIRE', open, ttl)
    end
  elseif kind == 'f' then
    local meta = base .. 'm:' .. stream
    redis.call('HSETNX', meta, 'head', 0)
    redis.call('HSETNX', meta, 'floor', 0)
    redis.call('HSET', meta, 'finished', 1)
    -- The events live exactly as long as the state that vouches for them.
    redis.call('PEXPIRE', meta, ttl)
    redis.call('PEXPIRE', base .. 'x:' .. stream, ttl)
    redis.call('HDEL', open, stream)
  end
end
redis.call('PEXPIRE', KEYS[1], ttl)
local out = {0, last, holes}
for _, stream in ipairs(dropped) do
  out[#out + 1] = stream
end
return out
