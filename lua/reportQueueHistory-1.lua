--[[
  A queue tells the namespace's grantor, while it gathers after a restart or failover (includes/
  grantorRecovery), what it delivered lately (readQueueHistory-1.lua): each delivery is counted again in
  every limit of its bucket, as if granted then with the longest lease (so that it counts at least as long
  as its token could have), and the queue counts as reported. Travel time makes a delivery look more
  recent than it was: the safe direction. Where the queue's history is not whole for a throttle's
  longest window (its own node lost it), the throttle is held until what it may lack has left the window.

  Input:
    KEYS[1]  the namespace's registry version key (it names the slot)
    ARGV[1]  the namespace's throttle key prefix   ARGV[2] the queue's id (prefix:queue)
    ARGV[3]  wholeForUs (how far back the queue's history is whole)
    ARGV[4]  T, then the T throttles (encoded names) the queue's workers declare
    ARGV[4+T+1]  B, then per bucket: bucket id, S, then S pairs (agoUs, count)
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output: { nowUs, deliveries counted again }
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/intArg"
--- @include "includes/schedulerKeys"
--- @include "includes/windowCounter"
--- @include "includes/bucketCounters"
--- @include "includes/countAgain"

local throttlePrefix, queueId, wholeForUs = ARGV[1], ARGV[2], tonumber(ARGV[3])
local now = nowUs()
local nowMs = math.floor(now / 1000)
local recordKey = throttlePrefix .. ':grantor'
local hmaxUs = (tonumber(rcall('HGET', recordKey, 'hmax') or 0) or 0) * 1000
local counted = 0
local throttleCount = tonumber(ARGV[4])
for t = 1, throttleCount do
  local name = ARGV[4 + t]
  local limits = throttleLimits(throttlePrefix, name)
  if limits then
    local longest = 0
    for _, limit in ipairs(limits) do if limit.windowMs > longest then longest = limit.windowMs end end
    if wholeForUs < longest * 1000 then
      holdThrottleUntil(throttlePrefix, name, math.ceil((now - wholeForUs) / 1000) + longest)
    end
  end
end
counted = countAgain(throttlePrefix, 5 + throttleCount, now, hmaxUs)
saveBucketCounters()
rcall('SADD', recordKey .. ':reported', queueId)
return { now, counted }
