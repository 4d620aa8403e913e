-- Forgets a session, a bounded slice at a time so that a long-lived
-- session never blocks Redis. The first call leaves a tombstone that every
-- other script obeys (its owner stops at its next write or renewal); each
-- call deletes up to `count` request streams from `from` on, and the last
-- one the session-wide keys.
-- KEYS[1] the session's epoch key (it names the slot)
-- ARGV: base, from, count, session ttl (ms)
-- Returns the next `from`, or -1 once the session is gone.
local base, from, count = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('SET', base .. 'gone', 1, 'PX', ARGV[4])
local next = tonumber(redis.call('GET', base .. 'next') or '0')
local stop = math.min(next, from + count)
for m = from, stop - 1 do
  redis.call('DEL', base .. 'm:' .. m, base .. 'x:' .. m, base .. 'p:' .. m)
end
if stop < next then
  return stop
end
redis.call('DEL', base .. 'm:s', base .. 'x:s', base .. 'next', base .. 'open',
  base .. 'lease', base .. 'state', KEYS[1])
return -1
