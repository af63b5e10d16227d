--[[
  Whether the deliveries (or grants) a caller just got from this node must be held by a replica before they
  may start: src/redis/ReplicaConfirmation.ts says why. A master frozen past the failover timeout (SIGSTOP,
  a stalled VM) runs, for a few ms after it wakes and before it learns it was replaced, the calls it is sent
  as a master, on counts its successor has moved past; its writes are dropped later, but the deliveries have
  happened. Its replicas no longer acknowledge anything it writes, so a delivery that a replica acknowledged
  (WAIT) was not made on a deposed master.
  Confirmation is asked while the node has replicas, and for graceMs after the last one left: a woken master
  sees its replicas leave (their links closed when they were promoted or moved) just before it learns it was
  replaced, and a delivery it makes then must not pass for one on a master without replicas. A promoted
  replica has a new replication id: it has lost no replica, and asks only once it has some.

  Input:
    KEYS[1] a HASH on this node, in the slot of the caller's call (fields replid, replicas, noReplicasSince;
            its ':replicas-mark' spares INFO for 10 ms)
    ARGV[1] graceMs
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output: { role, replid, replicas, confirm, orphan, runid }
    role      'master' or another role (the caller's call ran on a node that is no master now)
    replid    INFO's master_replid: it changes when a replica is promoted, or a master follows a new one
    replicas  replicas online (INFO's slaveN lines with state=online)
    confirm   1: ask a replica (WAIT) before the call's deliveries start; 0: there is no replica to ask
    orphan    1: a master that had replicas under this replication id and has none now (its last one left, or was
              promoted while this node was cut off or frozen); 0 otherwise
    runid     INFO's run_id when orphan (who to ask a Sentinel about: src/redis/sentinelVouch.ts), else ''
]]
local rcall = redis.call
local recordKey = KEYS[1]
local graceMs = tonumber(ARGV[1])

--- @include "includes/nowUs"

-- INFO costs some 10 us, a share of a delivery call's own: a node with replicas keeps what it read for
-- MARK_MS behind a mark (gone long before a failover completes, and past once a frozen node wakes).
local MARK_MS = 10
local markKey = recordKey .. ':replicas-mark'

-- A master without replicas, which had some: it says who it is (INFO server, only in this rare state).
local function reply(role, replid, replicas, confirm, since)
  if role == 'master' and replicas == 0 and since > 0 then
    return { role, replid, replicas, confirm, 1, string.match(rcall('INFO', 'server'), 'run_id:(%w+)') or '' }
  end
  return { role, replid, replicas, confirm, 0, '' }
end

if rcall('EXISTS', markKey) == 1 then
  local cached = rcall('HMGET', recordKey, 'replid', 'replicas', 'noReplicasSince')
  local count, since = tonumber(cached[2] or 0), tonumber(cached[3] or 0)
  local nowMs = math.floor(nowUs() / 1000)
  return reply('master', cached[1], count, (count > 0 or (since > 0 and nowMs - since < graceMs)) and 1 or 0, since)
end

local info = rcall('INFO', 'replication')
local role = string.match(info, 'role:(%w+)') or '?'
local replid = string.match(info, 'master_replid:(%w+)') or '?'
-- Only replicas online can acknowledge (one in a full resync cannot yet, nor be a promoted copy of these writes).
local replicas = 0
for _ in string.gmatch(info, 'slave%d+:[^\r\n]*state=online') do replicas = replicas + 1 end
if role ~= 'master' then return reply(role, replid, replicas, 1, 0) end

local stored = rcall('HMGET', recordKey, 'replicas', 'noReplicasSince', 'replid')
local nowMs = math.floor(nowUs() / 1000)
-- Fields written under another replication id describe the node this one replaced (they were replicated
-- here before its promotion): a new master has lost no replica of its own.
if stored[3] ~= replid then
  -- A node that has never had a replica has nothing to remember (and leaves no key behind).
  if replicas > 0 or stored[3] then
    rcall('HSET', recordKey, 'replid', replid, 'replicas', replicas, 'noReplicasSince', 0)
    rcall('SET', markKey, '1', 'PX', MARK_MS)
  end
  return reply(role, replid, replicas, replicas > 0 and 1 or 0, 0)
end
rcall('SET', markKey, '1', 'PX', MARK_MS)
local had = tonumber(stored[1] or 0)
if replicas > 0 then
  if had ~= replicas then rcall('HSET', recordKey, 'replicas', replicas) end
  return reply(role, replid, replicas, 1, 0)
end
local since = tonumber(stored[2] or 0)
if had > 0 then
  since = nowMs
  rcall('HSET', recordKey, 'replicas', 0, 'noReplicasSince', since)
end
return reply(role, replid, replicas, (since > 0 and nowMs - since < graceMs) and 1 or 0, since)
