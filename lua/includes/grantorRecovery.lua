--[[
  What the namespace's grantor does when it notices it is a new node (includes/nodeIdentity: a restart, or
  a replica promoted): rules 3 and 4 of leases, with Redis in the grantor's role. Its counters may lack
  deliveries counted just before: a snapshot older than them was loaded, or the replica had not received them.
  Those deliveries happened, and the ones who made them remember: each exact worker what it delivered (src/
  worker/recovery/deliveryMemory.ts), each leased queue what it spent, in its own slot (includes/queueHistory).
  So the namespace grants nothing (a workers' gather, includes/recoveryHold's hold 'gather') until
    - h (the longest lease any worker asked with, and a margin) has passed: every token the previous node
      granted is spent or expired by then (rule 1), and
    - every worker and queue expected has told what it delivered lately (lua/reportDeliveries-1.lua, lua/
      reportQueueHistory-1.lua), and the counts are rebuilt from that. Expected: the live registry's exact
      workers and leased queues when the change is noticed, every one a reporting worker saw alive within its
      throttles' longest window (a registry restored from an older state may lack them), and every one alive
      in the registry when the last report comes; or until a third of the longest declaration time to live
      passed (by then every live worker refreshed the registry, and told).
  The throttles of those that never tell (no live worker, a worker without a start deadline, a queue whose
  own node lost its record) hold for their longest window instead; if nobody told at all, the whole
  namespace does. Whichever script notices the change first (an exact delivery, a leased queue's lease)
  begins the same gather.
  Each Grantor of the API remembers what it granted too (src/grant/grantMemory.ts): every one whose grants may
  still count (:api) is expected, and a live one tells (lua/reportDeliveries-1.lua, of each window counter); the
  throttles of one that is gone hold for their longest window. Where the deployment's Redis keeps acknowledged
  writes (durableRedis), nothing was lost: only the previous node's leases are waited out (hold 'lease').

  Record (<throttlePrefix>:grantor HASH, besides includes/nodeIdentity's and recoveryHold's fields):
    epoch       the count of changes seen      hmax   the longest lease asked with (ms)
    gathering   the epoch whose reports are awaited ('' once rebuilt)
    gatherUntil ms after which those that did not report hold their throttles for their longest window
  <throttlePrefix>:grantor:reported   SET of the worker ids (exact), queue ids (prefix:queue, leased) and
                                      Grantor ids (api.<random>) that reported for the epoch
  <throttlePrefix>:grantor:holds      HASH throttle -> ms until which it is held (one that could not tell)
  <throttlePrefix>:grantor:expected   HASH worker id, queue id or Grantor id -> "<encoded throttle>:<longest
                                      ms>,...": whose reports are awaited, the reported ones in :reported
  <throttlePrefix>:grantor:api        HASH Grantor id -> "<ms until its grants may count>|<encoded throttle>:
                                      <longest ms>,...": each Grantor of the API that granted here (written by
                                      lua/grantDeliveries-n.lua on each call that granted; lapsed ones dropped
                                      when a change is noticed)
  Needs includes/nodeIdentity, includes/recoveryHold, includes/rateCounter, includes/schedulerKeys (encodeSegment) and cjson.
]]
-- What other scripts use. The rest is local to the block below: a script's main chunk holds at most
-- 200 locals, and the delivery scripts, with bullmq's includes, come close to that.
local noticeGrantorChange, grantorGather
do
-- Workers refresh their declarations every third of this (ThrottledWorker's declarationTtlMs default).
local DEFAULT_DECLARATION_TTL_MS = 15000
-- Queues that report late have this long after the hold before they are given up on.
local GATHER_SLACK_MS = 2000

-- The live registry entries (JSON decoded), as registerDeclarations keeps them.
local function liveRegistryEntries(registryBase, nowMs)
  local alive = rcall('ZRANGEBYSCORE', registryBase .. ':alive', '(' .. nowMs, '+inf')
  local entries = {}
  for i = 1, #alive, 500 do
    local raw = rcall('HMGET', registryBase .. ':entries', unpack(alive, i, math.min(i + 499, #alive)))
    for _, json in ipairs(raw) do
      if json then
        local ok, entry = pcall(cjson.decode, json)
        if ok and type(entry) == 'table' then entries[#entries + 1] = entry end
      end
    end
  end
  return entries
end

-- Who tells a gather for a registry entry: its leased queue (prefix:queue, from the queue's records), or its
-- exact worker (from its memory).
local function gatherIdOf(entry)
  if entry.delivery == 'leased' then return tostring(entry.prefix) .. ':' .. tostring(entry.queue) end
  if entry.workerId then return tostring(entry.workerId) end
  return nil
end

-- The longest window (or a rate's fill time) of a declaration, as its registry entry gives it.
local function longestOfDeclaration(declaration)
  local longest = 0
  for _, limit in ipairs(declaration.limits or {}) do
    if tonumber(limit.windowMs) and tonumber(limit.windowMs) > longest then longest = tonumber(limit.windowMs) end
  end
  local rate = declaration.tokenRate
  if type(rate) == 'table' and tonumber(rate.n) and tonumber(rate.perMs) and tonumber(rate.burst) then
    local fillMs = rateOf(string.format('%d %d %d', rate.n, rate.perMs, rate.burst), 0).fillMs
    if fillMs > longest then longest = fillMs end
  end
  return longest
end

-- "<encoded name>:<longest ms>,..." for the throttles a registry entry declares (a worker's gather record).
local function declaredLongest(entry)
  local parts = {}
  for _, declaration in ipairs(entry.declarations or {}) do
    parts[#parts + 1] = encodeSegment(tostring(declaration.name)) .. ':' .. longestOfDeclaration(declaration)
  end
  return table.concat(parts, ',')
end

-- Call once per script, before any counter is read; returns the record's hmax (0 when neither read nor needed:
-- leaseMs 0 and no change of node). knownId: the node identity the caller saw recorded before
-- (includes/nodeIdentity), if any.
function noticeGrantorChange(throttlePrefix, nowMs, leaseMs, durable, knownId)
  local registryBase = throttlePrefix .. ':registry'
  local recordKey = throttlePrefix .. ':grantor'
  local seen = checkNodeIdentity(recordKey, nowMs, knownId)
  -- Exact delivery without a lease (the usual case) has no lease to record: read hmax only when it matters,
  -- so that a delivery call pays no command for it.
  local hmax = 0
  if leaseMs > 0 or seen == 'changed' then hmax = tonumber(rcall('HGET', recordKey, 'hmax') or 0) end
  if leaseMs > hmax then
    hmax = leaseMs
    rcall('HSET', recordKey, 'hmax', hmax)
  end
  if seen == 'changed' then
    local entries = liveRegistryEntries(registryBase, nowMs)
    local ttl = DEFAULT_DECLARATION_TTL_MS
    for _, entry in ipairs(entries) do
      if tonumber(entry.declarationTtlMs) and tonumber(entry.declarationTtlMs) > ttl then ttl = tonumber(entry.declarationTtlMs) end
    end
    local epoch = rcall('HINCRBY', recordKey, 'epoch', 1)
    rcall('DEL', recordKey .. ':reported', recordKey .. ':holds', recordKey .. ':expected')
    rcall('HDEL', recordKey, 'perThrottle')
    if durable then
      -- Nothing was lost: only the tokens the previous node granted must be spent or expired (rule 4).
      beginRecoveryHold(throttlePrefix, nowMs, 'lease', hmax)
      rcall('HSET', recordKey, 'gathering', '')
    else
      -- Every exact worker remembers what it delivered (src/worker/recovery/deliveryMemory.ts), every leased
      -- queue keeps what it spent in its own slot (includes/queueHistory), and every Grantor of the API what it
      -- granted (src/grant/grantMemory.ts): the live ones tell (lua/reportDeliveries-1.lua, lua/
      -- reportQueueHistory-1.lua), and only the throttles of those that never do hold for their longest window
      -- (includes/recoveryHold's workers' gather). The hold covers the previous node's leases too (rule 4).
      -- Whichever script notices first begins the same gather: a registry restored from an older state may have
      -- lost entries of every kind.
      beginRecoveryHold(throttlePrefix, nowMs, 'gather', hmax)
      local expected = grantorGather.apiGrantors(recordKey, nowMs)
      for _, entry in ipairs(entries) do
        local id = gatherIdOf(entry)
        if id then
          expected[#expected + 1] = id
          expected[#expected + 1] = declaredLongest(entry)
        end
      end
      if #expected > 0 then rcall('HSET', recordKey .. ':expected', unpack(expected)) end
      rcall('HSET', recordKey, 'gathering', epoch, 'gatherUntil', nowMs + math.max(hmax, math.ceil(ttl / 3)) + GATHER_SLACK_MS)
    end
  end
  -- The record's hmax as it stands now (read when leaseMs > 0): a caller that counts with a longer lease raises it.
  return hmax
end

grantorGather = {}

-- For a leased queue asking for tokens while a gather is on: 'report' (this queue must report first), 'wait'
-- (others have not: ask again shortly), or nil (none on, or past its time: the counters' recovery hold ends it,
-- includes/recoveryHold, and holds the throttles of those that never told).
function grantorGather.state(throttlePrefix, nowMs, queueId)
  local recordKey = throttlePrefix .. ':grantor'
  local fields = rcall('HMGET', recordKey, 'gathering', 'gatherUntil', 'epoch')
  if not fields[1] or fields[1] == '' then return nil end
  if rcall('SISMEMBER', recordKey .. ':reported', queueId) == 0 then return 'report', tonumber(fields[3]) end
  if nowMs < (tonumber(fields[2]) or 0) then return 'wait', tonumber(fields[3]) end
  return nil
end

-- Every Grantor of the API whose grants may still count, as HSET arguments of :expected (id, "<encoded
-- throttle>:<longest ms>,..."); those whose grants all left their windows are dropped from :api.
function grantorGather.apiGrantors(recordKey, nowMs)
  local expected, lapsed = {}, {}
  local flat = rcall('HGETALL', recordKey .. ':api')
  for i = 1, #flat, 2 do
    local bar = string.find(flat[i + 1], '|', 1, true)
    if bar and (tonumber(string.sub(flat[i + 1], 1, bar - 1)) or 0) > nowMs then
      expected[#expected + 1] = flat[i]
      expected[#expected + 1] = string.sub(flat[i + 1], bar + 1)
    else
      lapsed[#lapsed + 1] = flat[i]
    end
  end
  if #lapsed > 0 then rcall('HDEL', recordKey .. ':api', unpack(lapsed)) end
  return expected
end

-- A Grantor of the API granted: a gather expects it until untilMs, when every grant it made here left its
-- windows. declared: "<encoded throttle>:<longest ms>,..." of every throttle it granted, what holds if it never tells.
function grantorGather.noteApiGrants(throttlePrefix, grantorId, untilMs, declared)
  rcall('HSET', throttlePrefix .. ':grantor:api', grantorId, untilMs .. '|' .. declared)
end

-- Whether the gather has every report it waits for: every expected worker and queue (the live registry's when
-- it began, and those reporting workers saw alive), and every one alive in the registry now (a worker whose
-- entry had lapsed in the restored registry registers again within a heartbeat). A report that completes it
-- ends it (lua/reportDeliveries-1.lua, lua/reportQueueHistory-1.lua).
function grantorGather.complete(throttlePrefix, nowMs)
  local recordKey = throttlePrefix .. ':grantor'
  local reportedKey = recordKey .. ':reported'
  for _, id in ipairs(rcall('HKEYS', recordKey .. ':expected')) do
    if rcall('SISMEMBER', reportedKey, id) == 0 then return false end
  end
  for _, entry in ipairs(liveRegistryEntries(throttlePrefix .. ':registry', nowMs)) do
    local id = gatherIdOf(entry)
    if id and rcall('SISMEMBER', reportedKey, id) == 0 then return false end
  end
  return true
end
end -- of the block that keeps the helpers local
