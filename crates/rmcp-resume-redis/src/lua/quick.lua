-- Commits a quick call: a request stream born and answered in one batch,
-- kept packed (see commit.lua), fenced by the owner's epoch as every
-- commit is. The instance has already checked that the batch is one
-- (`QuickCall` in log.rs), so this script only fences and writes: no loop
-- over its arguments, no key built in Lua, no number converted. It stores
-- what commit.lua stores for the same batch, field for field.
-- KEYS[1] the session's epoch key, KEYS[2] its tombstone, KEYS[3] the
--         stream's state hash
-- ARGV: epoch, answered ttl (ms), head (the events' count), bytes, then
--       each event's index and data
-- Returns commit.lua's refusals ({-4, ...} deleted, {-3, ...} lost,
-- {-1, current epoch, ...} fenced), {-6} when Redis already knows the
-- stream (a retried batch: the instance sends it to commit.lua, which
-- tells an earlier try from another epoch's history), else {0}.
local guard = redis.call('MGET', KEYS[2], KEYS[1])
if guard[1] then
  return {-4, 0, 0, 0}
end
if guard[2] ~= ARGV[1] or guard[2] == '0' then
  local current = tonumber(guard[2] or '0')
  if current == 0 then
    return {-3, 0, 0, 0}
  end
  if current > tonumber(ARGV[1]) then
    return {-1, current, 0, 0}
  end
  if current < tonumber(ARGV[1]) then
    return {-3, 0, 0, 0}
  end
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  return {-6}
end
redis.call('HSET', KEYS[3], 'head', ARGV[3], 'floor', '0', 'bytes', ARGV[4], 'finished', '1',
  'packed', '1', 'e', ARGV[1], unpack(ARGV, 5))
redis.call('PEXPIRE', KEYS[3], ARGV[2])
return {0}
