--[[
  What the namespace's grantor does when it notices it is a new node (includes/nodeIdentity: a restart, or
  a replica promoted): rules 3 and 4 of leases, with Redis in the grantor's role. Its counters may lack
  deliveries counted just before, so it grants nothing until
    - h (the longest lease any worker asked with, and a margin) has passed: every token the previous node
      granted is spent or expired by then (rule 1), and
    - every queue of the namespace has told it what it delivered lately (reportQueueHistory-1.lua,
      recorded in each queue's own slot by leased delivery), and the counts are rebuilt from that, and
    - every leased queue a reporting worker saw alive in the registry within its throttles' longest window
      has reported too (a registry restored from an older state may lack a queue that delivered), or a
      third of the longest declaration time to live passed (by then every live worker refreshed the registry).
  A queue that cannot tell (no live worker reports it before the gather ends, or its own node lost its
  record) holds the throttles it declares for their longest window instead. Where deliveries were
  counted on this very node (exact delivery: a queue in the namespace's slot), nothing can be rebuilt:
  the throttles hold for their longest window (includes/recoveryHold), unless the deployment's Redis keeps
  acknowledged writes (durableRedis).

  Where every delivery was counted here by exact workers (no leased queue, no Grantor API grant: apiGrants),
  the workers remember what they delivered: the namespace holds for a workers' gather instead (includes/
  recoveryHold, lua/reportDeliveries-1.lua), expecting the live registry's workers and every worker a
  reporting one saw alive within its throttles' longest window.

  Record (<throttlePrefix>:grantor HASH, besides includes/nodeIdentity's and recoveryHold's fields):
    epoch       the count of changes seen      hmax   the longest lease asked with (ms)
    gathering   the epoch whose reports are awaited ('' once rebuilt)
    gatherUntil ms after which queues that did not report hold their throttles for their longest window
  <throttlePrefix>:grantor:reported   SET of queue ids (prefix:queue) that reported for the epoch
  <throttlePrefix>:grantor:holds      HASH throttle -> ms until which it is held (a queue that could not tell)
  <throttlePrefix>:grantor:expected   HASH worker id (a workers' gather) or queue id (leased queues' gather) ->
                                      "<encoded throttle>:<longest ms>,...": whose reports are awaited besides
                                      the live registry's, the reported ones in :reported
    apiGrants   '1' once the Grantor API granted here (lua/grantDeliveries-n.lua)
  Needs includes/nodeIdentity, includes/recoveryHold, includes/rateCounter, includes/schedulerKeys (encodeSegment) and cjson.
]]
-- What other scripts use. The rest is local to the block below: a script's main chunk holds at most
-- 200 locals, and the delivery scripts, with bullmq's includes, come close to that.
local noticeGrantorChange, gatherState
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

local function queueIdOf(entry)
  return tostring(entry.prefix) .. ':' .. tostring(entry.queue)
end

local function seenLeased(entries)
  for _, entry in ipairs(entries) do if entry.delivery == 'leased' then return true end end
  return false
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
-- leaseMs 0 and no change of node). exactHere: the caller counts deliveries on this node
-- itself (exact delivery), so what it counted may be lost with the node. knownId: the node identity the caller
-- saw recorded before (includes/nodeIdentity), if any.
function noticeGrantorChange(throttlePrefix, nowMs, leaseMs, durable, exactHere, knownId)
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
    local exact, ttl = exactHere, DEFAULT_DECLARATION_TTL_MS
    for _, entry in ipairs(entries) do
      if entry.delivery ~= 'leased' then exact = true end
      if tonumber(entry.declarationTtlMs) and tonumber(entry.declarationTtlMs) > ttl then ttl = tonumber(entry.declarationTtlMs) end
    end
    local epoch = rcall('HINCRBY', recordKey, 'epoch', 1)
    rcall('DEL', recordKey .. ':reported', recordKey .. ':holds', recordKey .. ':expected')
    rcall('HDEL', recordKey, 'perThrottle')
    if durable then
      -- Nothing was lost: only the tokens the previous node granted must be spent or expired (rule 4).
      beginRecoveryHold(throttlePrefix, nowMs, 'lease', hmax)
      rcall('HSET', recordKey, 'gathering', '')
    elseif exact and (seenLeased(entries) or rcall('HGET', recordKey, 'apiGrants') == '1') then
      -- Deliveries counted here may be lost with the node, and some were not counted by workers that
      -- remember them (a leased queue's tokens, the Grantor API's grants): nothing to rebuild them from.
      beginRecoveryHold(throttlePrefix, nowMs, 'window', hmax)
      rcall('HSET', recordKey, 'gathering', '')
    elseif exact then
      -- Every exact worker remembers what it delivered (src/worker/recovery/deliveryMemory.ts): the live ones tell
      -- (lua/reportDeliveries-1.lua), and only the throttles of those that never do hold for their longest
      -- window (includes/recoveryHold's workers' gather).
      beginRecoveryHold(throttlePrefix, nowMs, 'gather', hmax)
      local expected = {}
      for _, entry in ipairs(entries) do
        if entry.workerId then
          expected[#expected + 1] = tostring(entry.workerId)
          expected[#expected + 1] = declaredLongest(entry)
        end
      end
      if #expected > 0 then rcall('HSET', recordKey .. ':expected', unpack(expected)) end
      rcall('HSET', recordKey, 'gathering', epoch, 'gatherUntil', nowMs + math.max(hmax, math.ceil(ttl / 3)) + GATHER_SLACK_MS)
    else
      -- Leased queues only: the hold covers the previous node's leases; the gather, every queue's report.
      beginRecoveryHold(throttlePrefix, nowMs, 'lease', hmax)
      rcall('HSET', recordKey, 'gathering', epoch, 'gatherUntil', nowMs + math.max(hmax, math.ceil(ttl / 3)) + GATHER_SLACK_MS)
    end
  end
  -- The record's hmax as it stands now (read when leaseMs > 0): a caller that counts with a longer lease raises it.
  return hmax
end

-- While a gather is on: 'report' (this queue must report first), 'wait' (others have not), or nil (done).
function gatherState(throttlePrefix, nowMs, queueId)
  local registryBase = throttlePrefix .. ':registry'
  local recordKey = throttlePrefix .. ':grantor'
  local fields = rcall('HMGET', recordKey, 'gathering', 'gatherUntil', 'epoch', 'hold')
  local gathering = fields[1]
  if not gathering or gathering == '' then return nil end
  -- A workers' gather (exact workers' reports, includes/recoveryHold) began when no leased queue was known:
  -- one asks now, whose deliveries nobody gathers, so the namespace holds for its windows instead.
  if fields[4] == 'gather' then
    rcall('HSET', recordKey, 'gathering', '', 'hold', 'window')
    return nil
  end
  local reportedKey = recordKey .. ':reported'
  if rcall('SISMEMBER', reportedKey, queueId) == 0 then return 'report', tonumber(fields[3]) end
  local missing, missingSeen = {}, {}
  for _, entry in ipairs(liveRegistryEntries(registryBase, nowMs)) do
    local id = queueIdOf(entry)
    if rcall('SISMEMBER', reportedKey, id) == 0 then missing[#missing + 1] = entry end
  end
  -- Queues a reporting worker saw alive lately (lua/reportQueueHistory-1.lua), which the registry may lack.
  local expected = rcall('HGETALL', recordKey .. ':expected')
  for i = 1, #expected, 2 do
    if rcall('SISMEMBER', reportedKey, expected[i]) == 0 then missingSeen[#missingSeen + 1] = expected[i + 1] end
  end
  if (#missing > 0 or #missingSeen > 0) and nowMs < tonumber(fields[2]) then return 'wait', tonumber(fields[3]) end
  -- Given up on: the throttles of queues that never reported hold for their longest window.
  for _, entry in ipairs(missing) do
    for _, declaration in ipairs(entry.declarations or {}) do
      holdThrottleUntil(throttlePrefix, encodeSegment(tostring(declaration.name)), nowMs + longestOfDeclaration(declaration))
    end
  end
  for _, declared in ipairs(missingSeen) do
    for name, longest in string.gmatch(declared, '([^:,]+):(%d+)') do
      holdThrottleUntil(throttlePrefix, name, nowMs + tonumber(longest))
    end
  end
  rcall('HSET', recordKey, 'gathering', '')
  return nil
end
end -- of the block that keeps the helpers local
