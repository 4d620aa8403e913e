-- Appends one event to a stream and trims the stream to its window.
-- Fenced: an instance whose epoch is not the session's current one writes
-- nothing.
-- KEYS[1] the session's epoch key (it names the slot)
-- ARGV: base, epoch, stream, first index, data, weight, now (ms),
--       keep events, max events, retention (ms), max bytes, finish (0/1),
--       session ttl (ms)
local base, stream = ARGV[1], ARGV[3]
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current ~= tonumber(ARGV[2]) then
  return {-1, current}
end
local meta, key = base .. 'm:' .. stream, base .. 'x:' .. stream
if redis.call('HGET', meta, 'finished') == '1' then
  return {-2, current}
end
local first = tonumber(ARGV[4])
local head = tonumber(redis.call('HGET', meta, 'head') or first)
local floor = tonumber(redis.call('HGET', meta, 'floor') or first)
local now, weight = tonumber(ARGV[7]), tonumber(ARGV[6])
local keep, max, retention, max_bytes =
  tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
redis.call('XADD', key, head .. '-1', 'd', ARGV[5], 't', ARGV[7], 'w', weight)
local index = head
head = head + 1
local bytes = tonumber(redis.call('HGET', meta, 'bytes') or '0') + weight
-- Evict oldest first while the window says so; the newest event always
-- stays, and one append evicts a bounded number.
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
redis.call('HSET', meta, 'head', head, 'floor', floor, 'bytes', bytes)
if ARGV[12] == '1' then
  redis.call('HSET', meta, 'finished', 1)
  redis.call('HDEL', base .. 'open', stream)
end
for _, k in ipairs({meta, key, KEYS[1]}) do
  redis.call('PEXPIRE', k, ARGV[13])
end
return {index, floor}
