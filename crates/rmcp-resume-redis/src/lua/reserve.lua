-- Reserves request stream numbers, unique in the session across every
-- instance and every life of it. Fenced by the lease epoch.
-- KEYS[1] the session's epoch key (it names the slot)
-- ARGV: base, epoch, count, session ttl (ms), lowest first number (the
--       owner's numbers so far: after Redis lost data, never one again)
-- Returns {-4, 0} deleted, {-3, 0} unknown to Redis or at a lower epoch
-- (lost data),
-- {-1, current epoch} when fenced, else {first number, epoch}.
if redis.call('EXISTS', ARGV[1] .. 'gone') == 1 then
  return {-4, 0}
end
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current == 0 then
  return {-3, 0}
end
if current > tonumber(ARGV[2]) then
  return {-1, current}
end
if current < tonumber(ARGV[2]) then
  -- A lower epoch: Redis lost this owner's writes; it renews, and wins.
  return {-3, 0}
end
-- Raises the stream counter `key` from `old` to `new` (0: Redis held none),
-- and records the jump in `jumps` (field `old`, value `new`): no number in
-- between is ever handed out, so delete.lua steps over them. After a loss,
-- the least `new` recorded for one `old` stands.
local function jump(key, old, new, ttl)
  if ttl then
    redis.call('SET', key, string.format('%d', new), 'PX', ttl)
  else
    redis.call('SET', key, string.format('%d', new))
  end
  local jumps = ARGV[1] .. 'jumps'
  local prior = redis.call('HGET', jumps, string.format('%d', old))
  if not prior or tonumber(prior) > new then
    redis.call('HSET', jumps, string.format('%d', old), string.format('%d', new))
  end
  if ttl then
    redis.call('PEXPIRE', jumps, ttl)
  end
end
local next = ARGV[1] .. 'next'
local lowest = tonumber(ARGV[5] or '0')
local old = tonumber(redis.call('GET', next) or '0')
if old < lowest then
  jump(next, old, lowest, nil)
  redis.call('PEXPIRE', ARGV[1] .. 'jumps', ARGV[4])
end
local last = redis.call('INCRBY', next, ARGV[3])
redis.call('PEXPIRE', next, ARGV[4])
return {last - tonumber(ARGV[3]), current}
