-- Forgets a session, a bounded slice at a time so that a long-lived
-- session never blocks Redis. The first call leaves a tombstone that every
-- other script obeys (its owner stops at its next write or renewal); each
-- call deletes up to `count` request streams from `from` on, and the last
-- one the session-wide keys.
-- KEYS[1] the session's epoch key (it names the slot)
-- ARGV: base, from, count, session ttl (ms)
-- Returns the next `from`, or -1 once the session is gone. A session
-- numbered by a release that kept no `jumps` is walked number by number.
local base, from, count = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('SET', base .. 'gone', 1, 'PX', ARGV[4])
local next = tonumber(redis.call('GET', base .. 'next') or '0')
local stop = math.min(next, from + count)
-- Numbers a takeover or a seeding jumped over were never handed out (see
-- `jump` in lease.lua): a slice ends where such a gap starts, and the next
-- one starts past it, so that a session numbered from an epoch (about
-- 2^50) is not walked through from 0.
local past = nil
local jumps = redis.call('HGETALL', base .. 'jumps')
for i = 1, #jumps, 2 do
  local at, to = tonumber(jumps[i]), tonumber(jumps[i + 1])
  if at >= from and at < stop and to > at then
    stop, past = at, to
  end
end
for n = from, stop - 1 do
  -- '%d': Lua writes a number of 15 digits or more (an epoch's) with an
  -- exponent.
  local m = string.format('%d', n)
  redis.call('DEL', base .. 'm:' .. m, base .. 'x:' .. m, base .. 'p:' .. m)
end
if past then
  return past
end
if stop < next then
  return stop
end
redis.call('DEL', base .. 'm:s', base .. 'x:s', base .. 'next', base .. 'jumps', base .. 'open',
  base .. 'lease', base .. 'state', KEYS[1])
return -1
