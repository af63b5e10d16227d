--[[
  A queue tells the namespace's grantor, while it gathers after a restart or failover (includes/
  grantorRecovery), what it delivered lately (readQueueHistory-1.lua): each delivery is counted again in
  every limit of its bucket, as if granted then with the longest lease (so that it counts at least as long
  as its token could have), and the queue counts as reported. Travel time makes a delivery look more
  recent than it was: the safe direction. Where the queue's history is not whole for a throttle's
  longest window (its own node lost it), the throttle is held until what it may lack has left the window.
  The workers and leased queues the reporting worker saw alive lately are awaited too (the grantor's :expected,
  with what their throttles hold for if they never report): a registry restored from an older state may lack
  them. The report that completes the gather ends it (includes/grantorRecovery).

  Input:
    KEYS[1]  the namespace's registry version key (it names the slot)
    ARGV[1]  the namespace's throttle key prefix   ARGV[2] the queue's id (prefix:queue)
    ARGV[3]  wholeForUs (how far back the queue's history is whole; -1: all of it)
    ARGV[4]  Q, then Q pairs: a leased queue (prefix:queue) or exact worker (its id) the reporting worker saw
             alive, "<encoded throttle>:<longest ms>,..."
    ARGV[5+2Q]  T, then the T throttles (encoded names) the queue's workers declare
    then     B, then per bucket: bucket id, S, then S pairs (agoUs, count)
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output: { nowUs, deliveries counted again } (0 when no gather is on, or the queue already reported
  in this one: a queue tells once, whether on asking for tokens or on its heartbeat)
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/intArg"
--- @include "includes/schedulerKeys"
--- @include "includes/windowCounter"
--- @include "includes/bucketCounters"
--- @include "includes/countAgain"
--- @include "includes/nodeIdentity"
--- @include "includes/grantorRecovery"

local throttlePrefix, queueId, wholeForUs = ARGV[1], ARGV[2], tonumber(ARGV[3])
local now = nowUs()
local nowMs = math.floor(now / 1000)
local recordKey = throttlePrefix .. ':grantor'
local gather = rcall('HMGET', recordKey, 'gathering', 'hmax', 'hold')
if not gather[1] or gather[1] == '' or rcall('SISMEMBER', recordKey .. ':reported', queueId) == 1 then
  return { now, 0 }
end
local hmaxUs = (tonumber(gather[2] or 0) or 0) * 1000
local counted = 0
local seenCount = tonumber(ARGV[4])
for q = 1, seenCount do
  rcall('HSETNX', recordKey .. ':expected', ARGV[3 + 2 * q], ARGV[4 + 2 * q])
end
local throttlesAt = 5 + 2 * seenCount
local throttleCount = tonumber(ARGV[throttlesAt])
for t = 1, throttleCount do
  local name = ARGV[throttlesAt + t]
  local limits = throttleLimits(throttlePrefix, name)
  if limits then
    local longest = 0
    for _, limit in ipairs(limits) do if limit.windowMs > longest then longest = limit.windowMs end end
    if wholeForUs >= 0 and wholeForUs < longest * 1000 then
      holdThrottleUntil(throttlePrefix, name, math.ceil((now - wholeForUs) / 1000) + longest)
    end
  end
end
counted = countAgain(throttlePrefix, throttlesAt + 1 + throttleCount, now, hmaxUs)
saveBucketCounters()
rcall('SADD', recordKey .. ':reported', queueId)
-- The report that completes the gather ends it, as in lua/reportDeliveries-1.lua.
if grantorGather.complete(throttlePrefix, nowMs) then rcall('HSET', recordKey, 'gathering', '') end
return { now, counted }
