-- Takes, renews or fences a session's ownership lease.
-- KEYS[1] the session's epoch key (it names the slot)
-- ARGV: base, owner, lease (ms), session ttl (ms), now (ms), error JSON tail,
--       mode, held epoch, lowest next stream number
-- Modes:
--   'create' take a free lease, starting the session if Redis lacks it
--   'take'   take a free lease of a session Redis knows
--   'renew'  keep the lease of `held epoch`: a lapsed one is re-taken at the
--            same epoch when nobody took it since, and a session Redis lost
--            (a restart, a failover to a lagging replica) is seeded again at
--            that epoch, so an owner never fences itself
--   'fence'  end a dead owner's open calls without holding the lease (a
--            reader that serves no worker must never keep a session, nor
--            refresh it: with no call open it changes nothing)
-- A new epoch fences every earlier owner; each request stream the earlier
-- owner left open then ends with a terminal JSON-RPC error.
-- Returns {1, epoch, 0} held by this owner, {0, epoch, ttl left} held by
-- another (or taken over since `held epoch`), {2, epoch, streams ended}
-- taken or fenced, {3, 0, 0} unknown, {4, 0, 0} deleted,
-- {5, epoch, 0} seeded again after Redis lost it.
local base, owner, ttl, mode = ARGV[1], ARGV[2], ARGV[4], ARGV[7]
local lease = base .. 'lease'

local function refresh()
  -- Activity keeps every session-wide key, and each open call's, alive.
  for _, key in ipairs({KEYS[1], base .. 'state', base .. 'next', base .. 'open',
      base .. 'm:s', base .. 'x:s'}) do
    redis.call('PEXPIRE', key, ttl)
  end
  local open = redis.call('HKEYS', base .. 'open')
  for _, stream in ipairs(open) do
    redis.call('PEXPIRE', base .. 'm:' .. stream, ttl)
    redis.call('PEXPIRE', base .. 'x:' .. stream, ttl)
  end
end

local function hold(epoch)
  redis.call('HSET', lease, 'owner', owner, 'epoch', epoch)
  redis.call('PEXPIRE', lease, ARGV[3])
end

if redis.call('EXISTS', base .. 'gone') == 1 then
  return {4, 0, 0}
end
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local holder = redis.call('HGET', lease, 'owner')
if mode ~= 'fence' and holder == owner then
  redis.call('PEXPIRE', lease, ARGV[3])
  refresh()
  return {1, current, 0}
end
if holder then
  return {0, current, redis.call('PTTL', lease)}
end
if mode == 'renew' then
  local held = tonumber(ARGV[8])
  if current > held then
    return {0, current, 0}
  end
  if current == held then
    hold(held)
    refresh()
    return {1, held, 0}
  end
  -- Redis holds less than this owner wrote: the session is seeded again,
  -- and each stream's next append sets its floor above the lost events.
  redis.call('SET', KEYS[1], held, 'PX', ttl)
  local next = tonumber(redis.call('GET', base .. 'next') or '0')
  local lowest = tonumber(ARGV[9])
  if next < lowest then
    redis.call('SET', base .. 'next', lowest, 'PX', ttl)
  end
  hold(held)
  refresh()
  return {5, held, 0}
end
if mode ~= 'create' and current == 0 then
  return {3, 0, 0}
end
if mode == 'fence' and redis.call('EXISTS', base .. 'open') == 0 then
  -- No call to end: a reader must not touch (nor keep alive) a session
  -- nobody runs.
  return {3, 0, 0}
end
local epoch = redis.call('INCR', KEYS[1])
if mode ~= 'fence' then
  hold(epoch)
  redis.call('PEXPIRE', KEYS[1], ttl)
end
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
