--[[
  After the Redis node holding a throttle namespace's counters restarted or was promoted (includes/
  nodeIdentity), its counters may lack deliveries that happened: a snapshot older than them was loaded, or
  the replica had not received them. Until those deliveries have left every window, the namespace's
  throttles are held (no room), unless the deployment says its Redis never loses acknowledged writes:
    hold 'window'  each throttle for its longest window, plus holdMs (some deliveries were counted by nobody
                   that remembers them: the Grantor API's grants, or nobody told a gather)
    hold 'lease'   holdMs only: every token the previous node granted is spent or expired by then (rule 4);
                   the deployment's Redis keeps acknowledged writes (the afterRestart option 'resume')
    hold 'gather'  (every delivery counted by someone that remembers it: exact workers, leased queues' records)
                   holdMs, and until the gather ends: every one expected told what it delivered (lua/
                   reportDeliveries-1.lua, lua/reportQueueHistory-1.lua count it again), or gatherUntil passed,
                   and then the throttles of those that did not tell hold for their longest window from
                   holdFrom (includes/grantorRecovery's :expected)
  holdMs covers h (the longest lease) and a margin for clock drift. A throttle with a concurrency is held at
  least until every leased worker renewed its holds (a node that lost them counts them again from those).
  Besides, a throttle declared by a queue that could not tell the grantor what it delivered lately (see
  includes/grantorRecovery) is held until the ms in <throttlePrefix>:grantor:holds (the record's field
  perThrottle says that hash is worth reading).
  The record is the namespace's <throttlePrefix>:grantor HASH: id, since (nodeIdentity), holdFrom (ms, this
  node's clock), hold, holdMs, perThrottle. The including script defines rcall.
]]
-- What other scripts use. The rest is local to the block below: a script's main chunk holds at most
-- 200 locals, and the delivery scripts, with bullmq's includes, come close to that.
local beginRecoveryHold, holdThrottleUntil, recoveryHeldUntilUs
do
-- Clocks may run apart by this much over a hold: it is added to every hold.
local HOLD_MARGIN_MS = 100
-- Longer than the longest time between two renewals of a leased worker's concurrency holds.
local CONCURRENCY_RENEW_MS = 5000

local recoveryRecord

-- A workers' gather past gatherUntil ends here, in whichever script looks first: the throttles of the expected
-- workers that never told what they delivered hold for their longest window; when no worker told at all (none
-- alive, or none able to), nobody vouches for anything, and the whole namespace holds for its windows.
local function endWorkersGather(throttlePrefix, from)
  local recordKey = throttlePrefix .. ':grantor'
  if rcall('SCARD', recordKey .. ':reported') == 0 then
    rcall('HSET', recordKey, 'gathering', '', 'hold', 'window')
    return
  end
  local expected = rcall('HGETALL', recordKey .. ':expected')
  for i = 1, #expected, 2 do
    if rcall('SISMEMBER', recordKey .. ':reported', expected[i]) == 0 then
      for name, longest in string.gmatch(expected[i + 1], '([^:,]+):(%d+)') do
        holdThrottleUntil(throttlePrefix, name, from + tonumber(longest))
      end
    end
  end
  rcall('HSET', recordKey, 'gathering', '')
end

function beginRecoveryHold(throttlePrefix, nowMs, hold, leaseMs)
  local recordKey = throttlePrefix .. ':grantor'
  rcall('HSET', recordKey, 'holdFrom', nowMs, 'hold', hold, 'holdMs', leaseMs + HOLD_MARGIN_MS)
  recoveryRecord = nil
end

-- Holds one throttle (its encoded name) until untilMs at least.
function holdThrottleUntil(throttlePrefix, encodedName, untilMs)
  local holdsKey = throttlePrefix .. ':grantor:holds'
  if untilMs > tonumber(rcall('HGET', holdsKey, encodedName) or 0) then rcall('HSET', holdsKey, encodedName, untilMs) end
  rcall('HSET', throttlePrefix .. ':grantor', 'perThrottle', '1')
  recoveryRecord = nil
end

-- When the throttle (its limits as bucketCounters' throttleLimits reads them) is no longer held, in us; 0: not held.
function recoveryHeldUntilUs(throttlePrefix, encodedName, limits)
  if recoveryRecord == nil then
    local fields = rcall('HMGET', throttlePrefix .. ':grantor', 'holdFrom', 'hold', 'holdMs', 'perThrottle', 'gathering', 'gatherUntil')
    recoveryRecord = { from = tonumber(fields[1]), hold = fields[2], holdMs = tonumber(fields[3]) or 0, perThrottle = fields[4] == '1' }
    if recoveryRecord.hold == 'gather' and fields[5] and fields[5] ~= '' then
      local gatherUntil = tonumber(fields[6]) or 0
      if math.floor(nowUs() / 1000) < gatherUntil then
        recoveryRecord.gatherUntil = gatherUntil
      else
        -- Ending it may hold throttles (holdThrottleUntil), which drops the record read: it is read again here.
        local record = recoveryRecord
        endWorkersGather(throttlePrefix, record.from)
        local after = rcall('HMGET', throttlePrefix .. ':grantor', 'hold', 'perThrottle')
        record.hold, record.perThrottle = after[1], after[2] == '1'
        recoveryRecord = record
      end
    end
  end
  if not recoveryRecord.from then return 0 end
  local untilMs = recoveryRecord.from + recoveryRecord.holdMs
  if recoveryRecord.gatherUntil then
    -- While a workers' gather is on, nothing goes (the scripts look again when it is due to end), but for no
    -- longer than the window hold: by then what the node lost has left every window of the throttle.
    local longest = 0
    for _, limit in ipairs(limits) do if limit.windowMs > longest then longest = limit.windowMs end end
    local gatherEnd = math.min(recoveryRecord.gatherUntil, untilMs + longest)
    if gatherEnd > untilMs then untilMs = gatherEnd end
  end
  if recoveryRecord.perThrottle then
    local own = tonumber(rcall('HGET', throttlePrefix .. ':grantor:holds', encodedName) or 0)
    if own > untilMs then untilMs = own end
  end
  -- A rate's state is not counted again from the queues' records: lost, it is whole again once a burst has
  -- had time to fill (its tokens all spent by then), whatever the hold.
  local rateFillMs = limits.rate and limits.rate.fillMs or 0
  if recoveryRecord.hold == 'window' then
    local longest = rateFillMs
    for _, limit in ipairs(limits) do if limit.windowMs > longest then longest = limit.windowMs end end
    untilMs = untilMs + longest
  else
    untilMs = untilMs + rateFillMs
  end
  -- A concurrency's holds come back with each leased worker's next renewal (every 4 s at most,
  -- src/delivery/leased/LeasedDelivery.ts): nothing is granted from it before then.
  if limits.concurrency and untilMs < recoveryRecord.from + CONCURRENCY_RENEW_MS then untilMs = recoveryRecord.from + CONCURRENCY_RENEW_MS end
  return untilMs * 1000
end
end -- of the block that keeps the helpers local
