-- Commits a quick call: a request stream born and answered in one batch,
-- stored packed, as one string (`p:<m>`), fenced by the owner's epoch as
-- every commit is. The instance has already checked that the batch is one
-- (`QuickCall` in quick.rs) and written the string, so this script only
-- fences and writes: no loop over its arguments, no key built in Lua.
--
-- A packed stream is the string
--   <epoch>\n<count>\n<bytes>\n then, for each event from index 0,
--   <length of its data>\n<data>
-- one key with no fields (a hash holding an answer over 64 bytes is a
-- hashtable, each field an entry of its own). Nothing appends to an
-- answered stream, so it never changes; it expires `answered ttl` after
-- its commit, or after a read that still owed its reader events.
-- read.lua, commit.lua's state and delete.lua know the layout.
--
-- KEYS[1] the session's epoch key, KEYS[2] its tombstone, KEYS[3] the
--         stream's state hash (the general layout), KEYS[4] its packed string
-- ARGV: epoch, answered ttl (ms), the packed string
-- Returns commit.lua's refusals ({-4, ...} deleted, {-3, ...} lost,
-- {-1, current epoch, ...} fenced), {-6} when Redis holds the stream in the
-- general layout (commit.lua judges it), {-5} when another epoch packed
-- it (two histories: nothing is written), else {0}, a retry of this
-- owner's own batch included (epochs are never handed out twice).
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
if redis.call('SET', KEYS[4], ARGV[3], 'NX', 'PX', ARGV[2]) then
  return {0}
end
local held = redis.call('GET', KEYS[4])
if held and string.sub(held, 1, string.len(ARGV[1]) + 1) == ARGV[1] .. '\n' then
  return {0}
end
return {-5}
