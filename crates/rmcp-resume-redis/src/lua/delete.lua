-- Forgets a session: its lease, its epoch, its state and every stream.
-- KEYS[1] the session's epoch key (it names the slot)
-- ARGV: base
local base = ARGV[1]
local next = tonumber(redis.call('GET', base .. 'next') or '0')
for m = 0, next - 1 do
  redis.call('DEL', base .. 'm:' .. m, base .. 'x:' .. m)
end
redis.call('DEL', base .. 'm:s', base .. 'x:s', base .. 'next', base .. 'open',
  base .. 'lease', base .. 'state', KEYS[1])
return next
