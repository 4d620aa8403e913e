-- Commits a batch of an owner's writes, in order, fenced by its epoch: an
-- instance whose epoch is not the session's current one writes nothing.
-- KEYS[1] the session's epoch key (it names the slot)
-- ARGV: base, epoch, now (ms), keep events, max events, retention (ms),
--       max bytes, session ttl (ms), answered ttl (ms), then one group of
--       four per write:
--   'a', stream, index ('*': the stream's head), data   append an event
--   'o', stream, request id (JSON), ''                  a call is open
--   'f', stream, '', ''                                 the call is answered
-- Returns {-4, 0, 0, 0} when the session was deleted, {-3, 0, 0, 0} when
-- Redis no longer knows it (lost data: the owner seeds it again),
-- {-1, current epoch, 0, 0} when fenced (a higher epoch took over; a lower
-- one means Redis lost this owner's writes: {-3, ...}), {-5, stream, index, 0} when an
-- index this batch writes holds another epoch's event (the histories
-- diverged: nothing is written), else {0, index of the last append
-- (or -1), holes found, then the stream of each append dropped because its
-- stream was answered}.
--
-- Cost: a stream's state is read once per batch and written once, and it is
-- trimmed once, after the batch's last append to it; the open-call hash is
-- written once. The result is the one
-- a trim after every append gives: appends only grow a stream, so the
-- oldest events a later trim removes include every one an earlier would.
--
-- A stream born and answered in one batch (a quick call: its priming event
-- and its answer) with at most `packed_events` events and nothing to trim is
-- kept packed: its events are fields of its state hash ('packed' = 1, field
-- '<index>' = data), one small key instead of a Redis stream, whose first
-- node alone preallocates 4 KiB. Nothing appends to an answered stream, so
-- a packed stream never changes again; read.lua reads both layouts.
--
-- Each stream's state names the epoch that last wrote it ('e'). An index
-- below the head is skipped as an earlier try's only when that epoch is
-- this batch's: epochs are never handed out twice, so then it is this
-- owner's own write; another epoch's event there means two histories.
local base = ARGV[1]
local guard = redis.call('MGET', base .. 'gone', KEYS[1])
if guard[1] then
  return {-4, 0, 0, 0}
end
-- The same digits are the same epoch: the numbers are compared only when
-- the strings differ (Lua's `tonumber` is a `strtod`).
if guard[2] ~= ARGV[2] or guard[2] == '0' then
  local current = tonumber(guard[2] or '0')
  if current == 0 then
    return {-3, 0, 0, 0}
  end
  if current > tonumber(ARGV[2]) then
    return {-1, current, 0, 0}
  end
  if current < tonumber(ARGV[2]) then
    -- Redis holds a lower epoch than this owner's: it lost the owner's
    -- writes (and a stale owner may have seeded since). The owner renews,
    -- and the higher epoch wins.
    return {-3, 0, 0, 0}
  end
end
local packed_events = 16
-- A quick call alone in its batch comes as quick.lua, packed as one string
-- (`p:<m>`); here it is a retry that found the stream in this layout, or a
-- batch the instance did not send as one.
local now, keep, max = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local retention, max_bytes, ttl = tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
-- An answered stream is kept as long as the in-process log keeps one; an
-- open one as long as the session.
local answered_ttl = ARGV[9]
local open = base .. 'open'
local last, dropped, holes = -1, {}, 0
-- The open-call hash's changes, written once at the end: a call opened
-- and answered in the same batch never touches it.
local opens, closes = {}, {}

-- The streams this batch touches, in the order it first touches them.
local states, touched = {}, {}
-- Packed streams (quick.lua's): read like any answered stream, never
-- written here.
local sealed = {}

local function first_index(stream)
  if stream == 's' then return 1 end
  return 0
end

local function state(stream)
  local s = states[stream]
  if s ~= nil then return s end
  local meta = base .. 'm:' .. stream
  local fields = redis.call('HMGET', meta, 'head', 'floor', 'bytes', 'finished', 'e')
  if fields[1] == false and stream ~= 's' then
    -- A quick call quick.lua packed: answered, so sealed. Its epoch says
    -- whether an index below its head is this owner's earlier try or
    -- another history.
    local packed = redis.call('GET', base .. 'p:' .. stream)
    if packed then
      local epoch, count, bytes = string.match(packed, '^(%d+)\n(%d+)\n(%d+)\n')
      fields = {count, '0', bytes, '1', epoch}
      sealed[stream] = true
    end
  end
  s = {
    meta = meta,
    standalone = stream == 's',
    key = base .. 'x:' .. stream,
    -- Redis hands a missing field to Lua as `false`.
    known = fields[1] ~= false,
    -- Only a stream with state before this batch can be in the open-call
    -- hash already.
    existed = fields[1] ~= false,
    head = tonumber(fields[1] or first_index(stream)),
    floor = tonumber(fields[2] or first_index(stream)),
    bytes = tonumber(fields[3] or '0'),
    finished = fields[4] == '1',
    -- The epoch that last wrote it; states of earlier releases have none.
    writer = fields[5],
    trim = 0,
    dirty = false,
    -- A stream this batch starts keeps its appends here until the end,
    -- where they are packed or added to its Redis stream.
    packable = fields[1] == false,
    pending = {},
  }
  states[stream] = s
  touched[#touched + 1] = stream
  return s
end

-- The standalone stream's ids jump where a takeover began a segment (see
-- lease.lua), so its events are counted, not its ids, and the oldest is the
-- first entry at or above the floor, wherever it is. The floor then goes
-- one past it (into a jump's gap, perhaps: read.lua knows the gaps).
local function trim_standalone(s)
  local budget = s.trim
  local count = redis.call('XLEN', s.key)
  while count > 1 and budget > 0 do
    if count <= keep and count <= max and s.bytes <= max_bytes then
      break
    end
    -- '%d': Lua writes a number of 15 digits or more with an exponent.
    local oldest = redis.call('XRANGE', s.key, string.format('%d-1', s.floor), '+', 'COUNT', 1)[1]
    if oldest == nil then
      break
    end
    local aged = count > keep and tonumber(oldest[2][4]) + retention < now
    if not (count > max or s.bytes > max_bytes or aged) then
      break
    end
    redis.call('XDEL', s.key, oldest[1])
    s.bytes = s.bytes - tonumber(oldest[2][6])
    s.floor = tonumber(string.match(oldest[1], '^(%d+)-')) + 1
    count = count - 1
    budget = budget - 1
  end
end

local function trim(s)
  if s.standalone then
    return trim_standalone(s)
  end
  -- Oldest first while the window says so; the newest event always stays,
  -- and one append evicts a bounded number. The oldest event is read only
  -- when a rule may apply: under `keep` events and the caps, none does.
  local budget = s.trim
  while s.head - s.floor > 1 and budget > 0 do
    local count = s.head - s.floor
    if count <= keep and count <= max and s.bytes <= max_bytes then
      break
    end
    local oldest = redis.call('XRANGE', s.key, s.floor .. '-1', s.floor .. '-1')[1]
    if oldest ~= nil then
      local aged = count > keep and tonumber(oldest[2][4]) + retention < now
      if not (count > max or s.bytes > max_bytes or aged) then
        break
      end
      redis.call('XDEL', s.key, oldest[1])
      s.bytes = s.bytes - tonumber(oldest[2][6])
    end
    s.floor = s.floor + 1
    budget = budget - 1
  end
end

local function append(stream, at, data)
  local s = state(stream)
  if at ~= '*' and tonumber(at) < s.head then
    -- Committed by an earlier try of this batch.
    return
  end
  if s.finished then
    -- A late write behind its stream's answer: nobody can read it, so it
    -- is not kept, and the owner must not send it either.
    dropped[#dropped + 1] = stream
    return
  end
  local index = s.head
  if at ~= '*' then
    index = tonumber(at)
    if index > s.head or not s.known then
      -- Redis lost events this owner committed (a restart without
      -- persistence, a failover to a lagging replica): what it still holds
      -- of the stream goes, and the floor says where the events start again.
      if index > s.floor and (s.known or index > first_index(stream)) then
        holes = holes + 1
      end
      -- A stream's first event at its first index starts a key that never
      -- held events: stream numbers are never given twice.
      if s.known or index > first_index(stream) then
        redis.call('DEL', s.key)
        s.packable, s.pending = false, {}
      end
      s.floor, s.bytes = index, 0
    end
  end
  -- Strings from the arguments where they exist: Lua's number formatting
  -- is a large part of a small script's cost (and `tostring` writes a
  -- number of 15 digits or more, a segment's ids, with an exponent). `w`
  -- stays for the scripts of earlier releases, whose trim reads it.
  local id = (at ~= '*' and at or string.format('%d', index)) .. '-1'
  local weight = string.len(data) + 32
  if s.packable then
    s.pending[#s.pending + 1] = {index = index, id = id, data = data, weight = weight}
  else
    redis.call('XADD', s.key, id, 'd', data, 't', ARGV[3], 'w', weight)
  end
  s.bytes = s.bytes + weight
  s.head = index + 1
  s.known, s.dirty = true, true
  s.trim = s.trim + 256
  last = index
end

-- Before any write: an index below a stream's head that another epoch
-- wrote is not this batch's earlier try.
for i = 10, #ARGV, 4 do
  if ARGV[i] == 'a' and ARGV[i + 2] ~= '*' then
    local s = state(ARGV[i + 1])
    if tonumber(ARGV[i + 2]) < s.head and s.writer and s.writer ~= ARGV[2] then
      return {-5, ARGV[i + 1] == 's' and -1 or tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), 0}
    end
  end
end

for i = 10, #ARGV, 4 do
  local kind, stream = ARGV[i], ARGV[i + 1]
  if kind == 'a' then
    append(stream, ARGV[i + 2], ARGV[i + 3])
  elseif kind == 'o' then
    local s = state(stream)
    if not s.finished then
      s.known, s.dirty = true, true
      opens[stream], closes[stream] = ARGV[i + 2], nil
    end
  elseif kind == 'f' then
    local s = state(stream)
    s.known, s.dirty, s.finished = true, true, true
    if opens[stream] ~= nil and not s.existed then
      -- Opened and answered here: the hash never hears of it.
      opens[stream] = nil
    else
      opens[stream], closes[stream] = nil, true
    end
  end
end

-- Whether `s` may stay packed: answered, small, and with nothing a trim
-- would take (the rule `trim` applies, for a stream no append follows).
local function packs(s)
  local count = s.head - s.floor
  return s.finished and #s.pending > 0 and #s.pending <= packed_events
    and (count <= 1 or (count <= keep and count <= max and s.bytes <= max_bytes))
end

for _, stream in ipairs(touched) do
  local s = states[stream]
  if s.dirty and packs(s) then
    local fields = {'head', s.head, 'floor', s.floor, 'bytes', s.bytes, 'finished', 1, 'packed', 1,
      'e', ARGV[2]}
    for _, e in ipairs(s.pending) do
      fields[#fields + 1] = e.index
      fields[#fields + 1] = e.data
    end
    redis.call('HSET', s.meta, unpack(fields))
    redis.call('PEXPIRE', s.meta, answered_ttl)
  elseif s.dirty and not sealed[stream] then
    for _, e in ipairs(s.pending) do
      redis.call('XADD', s.key, e.id, 'd', e.data, 't', ARGV[3], 'w', e.weight)
    end
    trim(s)
    if s.finished then
      redis.call('HSET', s.meta, 'head', s.head, 'floor', s.floor, 'bytes', s.bytes, 'finished', 1,
        'e', ARGV[2])
    else
      redis.call('HSET', s.meta, 'head', s.head, 'floor', s.floor, 'bytes', s.bytes, 'e', ARGV[2])
    end
    -- The events live exactly as long as the state that vouches for them.
    local keep_for = s.finished and answered_ttl or ttl
    redis.call('PEXPIRE', s.meta, keep_for)
    redis.call('PEXPIRE', s.key, keep_for)
  end
end
local set, unset = {}, {}
for stream, id in pairs(opens) do
  set[#set + 1] = stream
  set[#set + 1] = id
end
for stream in pairs(closes) do
  unset[#unset + 1] = stream
end
-- In slices: `unpack` is bounded by Lua's stack (a seeding registers every
-- open call again in one batch).
local function each_slice(list, f)
  for from = 1, #list, 512 do
    f(unpack(list, from, math.min(from + 511, #list)))
  end
end
if #set > 0 then
  each_slice(set, function(...) redis.call('HSET', open, ...) end)
  redis.call('PEXPIRE', open, ttl)
end
each_slice(unset, function(...) redis.call('HDEL', open, ...) end)
-- The session-wide keys are the lease renewal's to keep alive.
local out = {0, last, holes}
for _, stream in ipairs(dropped) do
  out[#out + 1] = stream
end
return out
