-- Gives a lease back, if this owner still holds it.
-- KEYS[1] the session's epoch key (it names the slot)
-- ARGV: base, owner
local lease = ARGV[1] .. 'lease'
if redis.call('HGET', lease, 'owner') == ARGV[2] then
  return redis.call('DEL', lease)
end
return 0
