-- One consistent snapshot of a stream: its floor, head and whether it is
-- finished, and up to `count` events from `from` on. A read of an answered
-- stream that still owes its reader events keeps the stream at least
-- `answered ttl` longer: as in-process, an answered stream stays while a
-- reader is reading it.
-- KEYS[1] the session's epoch key (it names the slot)
-- ARGV: base, stream, first index, from, count, answered ttl (ms)
-- Returns {0} when the session is unknown or deleted, {1} when the request stream is,
-- else {2, floor, head, finished, at, index, data, index, data, ...}.
--
-- On the standalone stream, `floor` and `at` are a reader's at position
-- `from` (its cursor is `from - 1`), across the segments takeovers began
-- (see lease.lua's 'segs'):
--   cursor is the last id before a segment   `at` is the segment's start,
--                                            or the first after it that is
--                                            not empty (no event lies
--                                            between), and
--                                            `floor` at most `from` unless
--                                            the segment's start was trimmed
--   cursor strictly between that id and      `floor` is at least the
--   the segment's priming id (start - 1)     segment's start: an owner whose
--                                            writes Redis lost gave it
--   otherwise                                `at` is `from`, `floor` the
--                                            stream's
-- Elsewhere `at` is `from`.
local base, stream = ARGV[1], ARGV[2]
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('EXISTS', base .. 'gone') == 1 then
  return {0}
end
local meta = base .. 'm:' .. stream
local floor, head, finished, packed
if redis.call('EXISTS', meta) == 0 then
  if stream ~= 's' then
    -- A quick call quick.lua packed as one string, or no such stream.
    local key = base .. 'p:' .. stream
    local call = redis.call('GET', key)
    if not call then
      return {1}
    end
    local count, at = string.match(call, '^%d+\n(%d+)\n%d+\n()')
    local events, from = tonumber(count), tonumber(ARGV[4])
    local out = {2, 0, events, 1, ARGV[4]}
    if from >= events then
      return out
    end
    if redis.call('PTTL', key) < tonumber(ARGV[6]) then
      redis.call('PEXPIRE', key, ARGV[6])
    end
    -- Each event's data follows its length: walked from the first.
    for index = 0, math.min(events, from + tonumber(ARGV[5])) - 1 do
      local size, start = string.match(call, '^(%d+)\n()', at)
      at = start + tonumber(size)
      if index >= from then
        out[#out + 1] = index
        out[#out + 1] = string.sub(call, start, at - 1)
      end
    end
    return out
  end
  floor, head, finished = tonumber(ARGV[3]), tonumber(ARGV[3]), 0
else
  local fields = redis.call('HMGET', meta, 'floor', 'head', 'finished', 'packed')
  floor, head, finished = tonumber(fields[1]), tonumber(fields[2]), tonumber(fields[3] or '0')
  packed = fields[4] == '1'
end
-- `at` goes back as the digits it came in (or a segment's start): `from`
-- may be 2^64 - 1, which a Lua number does not hold exactly.
local at, at_digits = tonumber(ARGV[4]), ARGV[4]
if stream == 's' and packed == false then
  local segs = redis.call('HGET', meta, 'segs')
  if segs then
    local cursor, asked = at - 1, floor
    for last, start in string.gmatch(segs, '(%d+):(%d+)') do
      local l, s = tonumber(last), tonumber(start)
      if cursor == l then
        at, at_digits = s, start
        if asked <= s then
          floor = math.min(asked, cursor + 1)
        end
        -- A segment with no event ends where the next begins (its owner
        -- wrote nothing before the next takeover): go on past it, or a tail
        -- from its start ends at once at the next jump, on the same cursor.
        cursor = s - 1
      elseif cursor > l and cursor < s - 1 then
        floor = math.max(floor, s)
      end
    end
  end
end
local out = {2, floor, head, finished, at_digits}
local from = math.max(at, floor)
if finished == 1 and from < head and redis.call('PTTL', meta) < tonumber(ARGV[6]) then
  redis.call('PEXPIRE', meta, ARGV[6])
  redis.call('PEXPIRE', base .. 'x:' .. stream, ARGV[6])
end
if from < head and packed then
  -- A quick call's events, kept in its state hash (see commit.lua).
  local last = math.min(head, from + tonumber(ARGV[5])) - 1
  for index = from, last do
    local data = redis.call('HGET', meta, index)
    if not data then
      break
    end
    out[#out + 1] = index
    out[#out + 1] = data
  end
elseif from < head then
  local key = base .. 'x:' .. stream
  -- '%d': Lua writes a number of 15 digits or more (a segment's ids) with an
  -- exponent.
  local first = string.format('%d-1', from)
  for _, entry in ipairs(redis.call('XRANGE', key, first, '+', 'COUNT', ARGV[5])) do
    out[#out + 1] = string.match(entry[1], '^(%d+)-')
    out[#out + 1] = entry[2][2]
  end
end
return out
