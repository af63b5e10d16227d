--[[
  Notices when the Redis node running the script is not the one that ran it before: a restart (INFO's
  run_id is new on every start) or a replica promoted in a failover (its master_replid is new). Either may
  have lost recent writes: counts of deliveries that happened, and that the guarantee depends on.
  The node's identity is kept in the HASH recordKey (field id; since: the ms, this node's clock, it was
  first seen). INFO costs some 8 us, so a mark of IDENTITY_MARK_MS spares it on most calls: the mark cannot
  outlive a restart or a promotion (its expiry is absolute and passes long before either completes).
  The including script defines rcall.
]]
local IDENTITY_MARK_MS = 10

local function nodeIdentity()
  local server = rcall('INFO', 'server')
  local replication = rcall('INFO', 'replication')
  return (string.match(server, 'run_id:(%w+)') or '?') .. '.' .. (string.match(replication, 'master_replid:(%w+)') or '?')
end

-- 'same', 'first' (no identity was recorded: a new namespace) or 'changed'; records the node seen now.
-- knownId: the identity the caller saw recorded before ('' or nil: none). A node with no record, where the caller
-- saw one, lost it (a snapshot saved before the namespace's first delivery, a replica that never received it):
-- that is a change, not a new namespace, or nothing would hold and the forgotten deliveries would count for nothing.
local function checkNodeIdentity(recordKey, nowMs, knownId)
  if not rcall('SET', recordKey .. ':mark', '1', 'NX', 'PX', IDENTITY_MARK_MS) then return 'same' end
  local id = nodeIdentity()
  local stored = rcall('HGET', recordKey, 'id')
  if stored == id then return 'same' end
  rcall('HSET', recordKey, 'id', id, 'since', nowMs)
  if stored == false and (knownId == nil or knownId == '' or knownId == id) then return 'first' end
  return 'changed'
end
