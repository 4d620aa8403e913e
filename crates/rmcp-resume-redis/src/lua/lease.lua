-- Acquires or renews a session's ownership lease.
-- A free lease (never taken, or expired) is taken with a new epoch, which
-- fences every earlier owner; each request stream the earlier owner left
-- open then ends with a terminal JSON-RPC error, so its caller fails fast.
-- KEYS[1] the session's epoch key (it names the slot)
-- ARGV: base, owner, lease (ms), session ttl (ms), now (ms), error JSON tail,
--       create (1: a new session may be started)
-- Returns {1, epoch, 0} renewed, {0, epoch, ttl left} held by another,
-- {2, epoch, streams ended} taken, {3, 0, 0} unknown session (create 0).
local base, owner, ttl = ARGV[1], ARGV[2], ARGV[4]
local lease = base .. 'lease'
local holder = redis.call('HGET', lease, 'owner')
if holder == owner then
  redis.call('PEXPIRE', lease, ARGV[3])
  return {1, tonumber(redis.call('GET', KEYS[1]) or '0'), 0}
end
if holder then
  return {0, tonumber(redis.call('GET', KEYS[1]) or '0'), redis.call('PTTL', lease)}
end
if ARGV[7] ~= '1' and redis.call('EXISTS', KEYS[1]) == 0 then
  return {3, 0, 0}
end
local epoch = redis.call('INCR', KEYS[1])
redis.call('HSET', lease, 'owner', owner, 'epoch', epoch)
redis.call('PEXPIRE', lease, ARGV[3])
redis.call('PEXPIRE', KEYS[1], ttl)
local open = redis.call('HGETALL', base .. 'open')
local ended = 0
for i = 1, #open, 2 do
  local stream, id = open[i], open[i + 1]
  local meta, key = base .. 'm:' .. stream, base .. 'x:' .. stream
  local head = tonumber(redis.call('HGET', meta, 'head') or '0')
  local data = '{"jsonrpc":"2.0","id":' .. id .. ',"error":' .. ARGV[6] .. '}'
  redis.call('XADD', key, head .. '-1', 'd', data, 't', ARGV[5], 'w', string.len(data))
  redis.call('HSET', meta, 'head', head + 1, 'finished', 1)
  redis.call('HINCRBY', meta, 'bytes', string.len(data))
  redis.call('PEXPIRE', meta, ttl)
  redis.call('PEXPIRE', key, ttl)
  ended = ended + 1
end
redis.call('DEL', base .. 'open')
return {2, epoch, ended}
