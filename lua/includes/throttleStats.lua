--[[
  Statistics of exact delivery, where a queue's keys and its throttles' are in one slot: the queue's own
  notes (includes/throttleStatsNotes) and the bucket indexes kept with the counters, under each
  throttle's base:
    :active   ZSET bucket -> ms until which it counts something (window, rate or concurrency)
    :full     ZSET bucket -> ms when room returns, at the earliest (buckets at their limit)
              (includes/bucketIndexes; both pruned of past scores once every W/60 while the throttle
              delivers, and lapse two windows after unless a concurrency holds a bucket in them)
  Needs includes/schedulerKeys, includes/windowCounter and includes/bucketCounters.
]]
--- @include "throttleStatsNotes"
--- @include "throttleIndexes"

local function noteFull(throttlePrefix, bucket, roomAtMs)
  bucketIndexes.noteBlocked(throttleBase(throttlePrefix, bucket.name), bucket.bucket, roomAtMs)
end


local function saveThrottleStats(queueBase, throttlePrefix, nowMs)
  bucketIndexes.flush()
  saveDeliveryNotes(queueBase, nowMs, function(encodedName, longest)
    local limits = throttleLimits(throttlePrefix, encodedName)
    pruneThrottleIndexes(throttleBase(throttlePrefix, encodedName), nowMs, longest, limits ~= nil and limits.concurrency ~= nil)
  end)
end
