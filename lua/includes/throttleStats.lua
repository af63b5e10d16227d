--[[
  Statistics of exact delivery, where a queue's keys and its throttles' are in one slot: the queue's own
  notes (includes/throttleStatsNotes) and the bucket indexes kept with the counters, under each
  throttle's base:
    :active   ZSET bucket -> ms when its last counted token is released (buckets with deliveries in the window)
    :full     ZSET bucket -> ms when room returns, at the earliest (buckets at their limit)
              (both pruned of past scores once every W/60 while the throttle delivers, and lapse two windows after)
  Needs includes/schedulerKeys, includes/windowCounter and includes/bucketCounters.
]]
--- @include "throttleStatsNotes"
--- @include "throttleIndexes"

local function noteFull(throttlePrefix, bucket, roomAtMs)
  rcall('ZADD', throttleBase(throttlePrefix, bucket.name) .. ':full', intArg(roomAtMs), bucket.bucket)
end


local function saveThrottleStats(queueBase, throttlePrefix, nowMs)
  flushActiveIndexes()
  saveDeliveryNotes(queueBase, nowMs, function(encodedName, longest)
    pruneThrottleIndexes(throttleBase(throttlePrefix, encodedName), nowMs, longest)
  end)
end
