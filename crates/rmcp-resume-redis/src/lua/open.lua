-- Opens a request stream: allocates its number and records the JSON-RPC id it
-- answers, so that a takeover can end it. Fenced by the lease epoch.
-- KEYS[1] the session's epoch key (it names the slot)
-- ARGV: base, epoch, request id (JSON), session ttl (ms)
local base, ttl = ARGV[1], ARGV[4]
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current ~= tonumber(ARGV[2]) then
  return {-1, current}
end
local m = redis.call('INCR', base .. 'next') - 1
local meta = base .. 'm:' .. m
redis.call('HSET', meta, 'head', 0, 'floor', 0, 'bytes', 0, 'finished', 0)
redis.call('HSET', base .. 'open', m, ARGV[3])
for _, key in ipairs({meta, base .. 'open', base .. 'next', KEYS[1]}) do
  redis.call('PEXPIRE', key, ttl)
end
return {m, current}
