-- Takes, renews or fences a session's ownership lease.
-- KEYS[1] the session's epoch key (it names the slot)
-- ARGV: base, owner, lease (ms), session ttl (ms), now (ms), error JSON tail,
--       mode, held epoch, lowest next stream number, standalone head,
--       live ('1' when the owner's lease is live by its own clock),
--       confirm ('1' confirms this owner's seeding),
--       reconcile ('1': the next argument is every request stream the owner
--       has open, and any other that Redis has open is ended),
--       the owner's open request streams, comma-separated
-- Modes:
--   'create' take a free lease, starting the session if Redis lacks it
--   'take'   take a free lease of a session Redis knows
--   'renew'  keep the lease of `held epoch` (see below)
--   'fence'  end a dead owner's open calls without holding the lease (a
--            reader that serves no worker must never keep a session, nor
--            refresh it: with no call open it changes nothing)
--
-- Epochs never go back, also after Redis lost its data: a new epoch is the
-- larger of the session's current epoch + 1 and Redis's clock in
-- microseconds, so an epoch handed out before a loss is never handed out
-- again (a restart without persistence, a failover to a lagging replica),
-- as long as Redis's clock does not run back across the loss. Microseconds
-- since 1970 stay below 2^53, which Lua's numbers hold exactly, until 2255.
--
-- 'renew' by the holder of `held epoch`:
--   lease held by this owner          renewed; `confirm` ends a seeding
--   current epoch above held          fenced (taken over since)
--   current epoch equal, lease free   taken again at the same epoch: nobody
--                                     took the session since (this holds
--                                     unless Redis went back in time, a
--                                     rollback docs/redis.md names); not
--                                     if it is the owner's own seeding,
--                                     unconfirmed, and the owner not live
--   owner's lease not live            fenced: it may not seed
--   current epoch below held          Redis lost what this owner wrote: the
--     (or missing; also when another  session is seeded again at `held`,
--     instance holds a lower epoch:   provisionally, with its stream numbers
--     the higher epoch wins)          and standalone stream past everything
--                                     the owner gave out; a lower holder's
--                                     open calls end with the error
-- Only an owner whose lease is live by its own clock may seed: nobody else
-- can have written the session since its last renewal, so its history is
-- the whole history. A stale owner (paused or cut off past its lease) that
-- seeded would hand clients its history in place of its successor's.
-- A seeding stays provisional until the owner confirms it (it checks its
-- clock once the answer is back): a take of a provisional session finds it
-- unknown, so an unconfirmed seeding is never continued by anyone.
--
-- A new epoch fences every earlier owner; each request stream the earlier
-- owner left open then ends with a terminal JSON-RPC error.
-- Returns {1, epoch, calls ended by the reconcile} held by this owner,
-- {0, epoch, ttl left} held by
-- another (or taken over since `held epoch`, or not live), {2, epoch,
-- streams ended} taken or fenced, {3, 0, 0} unknown, {4, 0, 0} deleted,
-- {5, epoch, 0} seeded again (provisionally) after Redis lost it.
if redis.replicate_commands then
  -- Redis before 5 replicates a script verbatim unless told otherwise, and
  -- TIME is not deterministic.
  redis.replicate_commands()
end
local base, owner, ttl, mode = ARGV[1], ARGV[2], ARGV[4], ARGV[7]
local lease = base .. 'lease'
local seeding = base .. 'seeding'

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
  local jumps = base .. 'jumps'
  local prior = redis.call('HGET', jumps, string.format('%d', old))
  if not prior or tonumber(prior) > new then
    redis.call('HSET', jumps, string.format('%d', old), string.format('%d', new))
  end
  if ttl then
    redis.call('PEXPIRE', jumps, ttl)
  end
end

local function refresh()
  -- Activity keeps every session-wide key, and each open call's, alive.
  for _, key in ipairs({KEYS[1], base .. 'state', base .. 'next', base .. 'jumps', base .. 'open',
      base .. 'm:s', base .. 'x:s', seeding}) do
    redis.call('PEXPIRE', key, ttl)
  end
  local open = redis.call('HKEYS', base .. 'open')
  for _, stream in ipairs(open) do
    redis.call('PEXPIRE', base .. 'm:' .. stream, ttl)
    redis.call('PEXPIRE', base .. 'x:' .. stream, ttl)
  end
end

local function hold(epoch)
  redis.call('HSET', lease, 'owner', owner, 'epoch', string.format('%d', epoch))
  redis.call('PEXPIRE', lease, ARGV[3])
end

-- Ends the calls the session has open with the terminal error, written
-- under `epoch`: all of them, or those `keep` does not name.
local function end_open_calls(epoch, keep)
  local open = redis.call('HGETALL', base .. 'open')
  local ended = 0
  for i = 1, #open, 2 do
    local stream, id = open[i], open[i + 1]
    if (keep == nil or not keep[stream]) and redis.call('EXISTS', base .. 'm:' .. stream) == 0
        and redis.call('EXISTS', base .. 'p:' .. stream) == 1 then
      -- Answered and packed (quick.lua), yet still named open: its state
      -- was lost, not its answer. It is off the list; nothing is added.
      redis.call('HDEL', base .. 'open', stream)
    elseif keep == nil or not keep[stream] then
      local meta, key = base .. 'm:' .. stream, base .. 'x:' .. stream
      local head = tonumber(redis.call('HGET', meta, 'head') or '0')
      local data = '{"jsonrpc":"2.0","id":' .. id .. ',"error":' .. ARGV[6] .. '}'
      redis.call('XADD', key, string.format('%d-1', head), 'd', data, 't', ARGV[5],
        'w', string.len(data))
      redis.call('HSET', meta, 'head', string.format('%d', head + 1), 'finished', 1,
        'e', string.format('%d', epoch))
      redis.call('HINCRBY', meta, 'bytes', string.len(data))
      redis.call('PEXPIRE', meta, ttl)
      redis.call('PEXPIRE', key, ttl)
      redis.call('HDEL', base .. 'open', stream)
      ended = ended + 1
    end
  end
  return ended
end

-- Writes the session again at this owner's epoch, past every id it gave.
local function seed(held)
  redis.call('SET', KEYS[1], string.format('%d', held), 'PX', ttl)
  local next = tonumber(redis.call('GET', base .. 'next') or '0')
  local lowest = tonumber(ARGV[9])
  if next < lowest then
    jump(base .. 'next', next, lowest, ttl)
  end
  -- The standalone stream goes on where this owner's went: a later owner
  -- reads its head here, and must not give out an id this one gave.
  local standalone = tonumber(ARGV[10])
  local meta = base .. 'm:s'
  local head = tonumber(redis.call('HGET', meta, 'head') or '1')
  if head < standalone then
    -- Events from before the loss cannot say where the lost ones went:
    -- a cursor among them gets the floor, never a continuation.
    redis.call('DEL', base .. 'x:s')
    redis.call('HDEL', meta, 'segs')
    redis.call('HSET', meta, 'head', string.format('%d', standalone),
      'floor', string.format('%d', standalone), 'bytes', 0, 'e', string.format('%d', held))
    redis.call('PEXPIRE', meta, ttl)
  end
  redis.call('SET', seeding, string.format('%d', held), 'PX', ttl)
  hold(held)
  refresh()
end

-- A takeover starts the standalone stream's new segment at its epoch, as
-- it numbers its calls: a standalone id then says which owner gave it. A
-- failover that loses a whole takeover (its epoch and its events, which
-- clients may have received) can no longer let the next owner give those
-- ids again: the next owner's epoch, and so its first id, is above every
-- id the lost owner gave (unless that one gave a million events a second).
-- The jump is recorded in the stream's state ('segs': 'last:start' pairs,
-- comma-separated): `last` is the last id Redis held before the segment,
-- `start` its first. read.lua answers a reader at `last` with `start` (no
-- event lies between), and a reader at an id strictly between `last` and
-- `start - 1` (ids of an owner whose writes Redis lost) with the floor.
-- `start - 1` is the segment's priming id, a position and no event.
-- Boundaries the floor has passed mean nothing any more and are dropped.
-- Epochs, in microseconds, stay below 2^53 until 2255: every SDK's client
-- parses these ids exactly.
local function new_segment(epoch)
  local meta = base .. 'm:s'
  local state = redis.call('HMGET', meta, 'head', 'floor', 'segs')
  local head = tonumber(state[1] or '1')
  if head >= epoch then
    return
  end
  local floor = tonumber(state[2] or '1')
  local kept = {}
  for last, start in string.gmatch(state[3] or '', '(%d+):(%d+)') do
    if tonumber(start) >= floor then
      kept[#kept + 1] = last .. ':' .. start
    end
  end
  kept[#kept + 1] = string.format('%d:%d', head - 1, epoch)
  redis.call('HSET', meta, 'head', string.format('%d', epoch),
    'floor', string.format('%d', floor), 'segs', table.concat(kept, ','))
  redis.call('PEXPIRE', meta, ttl)
end

if redis.call('EXISTS', base .. 'gone') == 1 then
  return {4, 0, 0}
end
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local holder = redis.call('HGET', lease, 'owner')
local live = ARGV[11] == '1'
if mode ~= 'fence' and holder == owner then
  redis.call('PEXPIRE', lease, ARGV[3])
  if ARGV[12] == '1' then
    redis.call('DEL', seeding)
  end
  local ended = 0
  if ARGV[13] == '1' and current == tonumber(ARGV[8]) then
    -- A call Redis holds open that its owner answered long ago lost its
    -- answer (a failover to a lagging replica): nobody will ever write
    -- it again, so its readers get the terminal error now rather than
    -- wait for ever.
    local keep = {}
    for stream in string.gmatch(ARGV[14] or '', '[^,]+') do
      keep[stream] = true
    end
    ended = end_open_calls(current, keep)
  end
  refresh()
  return {1, current, ended}
end
if mode == 'renew' then
  local held = tonumber(ARGV[8])
  if current > held or (holder and current == held) then
    return {0, current, math.max(redis.call('PTTL', lease), 0)}
  end
  if current == held and not live and redis.call('EXISTS', seeding) == 1 then
    -- Its own seeding, never confirmed: it may have landed after the
    -- owner's lease ran out, over a successor's lost history.
    return {0, current, 0}
  end
  if current == held then
    hold(held)
    if ARGV[12] == '1' then
      redis.call('DEL', seeding)
    end
    refresh()
    return {1, held, 0}
  end
  if not live then
    return {0, current, 0}
  end
  -- Redis holds less than this owner wrote. Another holder can only be a
  -- lower epoch that took the session after the loss: the higher one wins.
  if holder then
    end_open_calls(held)
  end
  seed(held)
  return {5, held, 0}
end
if holder then
  return {0, current, redis.call('PTTL', lease)}
end
if mode ~= 'create' and current == 0 then
  return {3, 0, 0}
end
if redis.call('EXISTS', seeding) == 1 then
  -- Seeded after a loss and never confirmed, and its owner's lease ran
  -- out: nobody vouches for what it holds, so nobody continues it. A
  -- reader's fence still ends the calls it had open, so that their
  -- readers stop waiting.
  if mode == 'fence' then
    end_open_calls(current)
  end
  return {3, 0, 0}
end
if mode == 'fence' and redis.call('EXISTS', base .. 'open') == 0 then
  -- No call to end: a reader must not touch (nor keep alive) a session
  -- nobody runs.
  return {3, 0, 0}
end
local clock = redis.call('TIME')
local epoch = math.max(current + 1, tonumber(clock[1]) * 1000000 + tonumber(clock[2]))
if mode == 'fence' then
  redis.call('SET', KEYS[1], string.format('%d', epoch), 'KEEPTTL')
else
  redis.call('SET', KEYS[1], string.format('%d', epoch), 'PX', ttl)
  hold(epoch)
end
if current > 0 then
  -- A takeover numbers its calls from its epoch on: should a failover
  -- lose an earlier takeover, whose numbers started at a lower epoch, the
  -- counter Redis kept cannot hand one of them out again. (Epochs are
  -- microseconds apart; an owner would need a million calls a second to
  -- run into its successor's numbers.)
  local next = base .. 'next'
  local old = tonumber(redis.call('GET', next) or '0')
  if old < epoch then
    jump(next, old, epoch, ttl)
  end
  if mode ~= 'fence' then
    new_segment(epoch)
  end
end
local ended = end_open_calls(epoch)
return {2, epoch, ended}
