--[[
  Statistics kept as deliveries happen, so that stats never scan buckets. Per throttle (under its base
  "<throttlePrefix>{<encoded name>}"):
    :active   ZSET bucket -> ms when its last counted token is released (buckets with deliveries in the window)
    :full     ZSET bucket -> ms when room returns, at the earliest (buckets at their limit)
              (both pruned of past scores once every W/60 while the throttle delivers, and lapse two windows after)
    :waiting  ZSET bucket -> jobs held because that bucket is full
    :stats    HASH delivered, limited (totals since the keys exist), waiting (the sum of :waiting)
    :recent   HASH slot of W/60 of the longest window -> deliveries in it
  Needs includes/schedulerKeys and includes/bucketCounters (throttleLimits).
]]
--- @include "throttleStatsNotes"
local deliveredByThrottle = {}

local function noteDelivered(bucket)
  deliveredByThrottle[bucket.name] = (deliveredByThrottle[bucket.name] or 0) + 1
end

local function saveThrottleStats(throttlePrefix, nowMs)
  flushActiveIndexes()
  for encodedName, count in pairs(deliveredByThrottle) do
    local base = throttleBase(throttlePrefix, encodedName)
    rcall('HINCRBY', base .. ':stats', 'delivered', count)
    local limits = throttleLimits(throttlePrefix, encodedName)
    if limits then
      local longest = 0
      for _, limit in ipairs(limits) do if limit.windowMs > longest then longest = limit.windowMs end end
      local slotMs = math.max(1, math.floor(longest / 60))
      local slot = math.floor(nowMs / slotMs)
      if tonumber(rcall('HINCRBY', base .. ':recent', intArg(slot), count)) == count then
        -- A new slot: forget the ones a window and more behind (once they add up), and let the hash
        -- lapse when idle.
        if rcall('HLEN', base .. ':recent') > 80 then
          local old = {}
          for _, field in ipairs(rcall('HKEYS', base .. ':recent')) do
            if tonumber(field) <= slot - 61 then old[#old + 1] = field end
          end
          if #old > 0 then rcall('HDEL', base .. ':recent', unpack(old)) end
        end
        rcall('PEXPIRE', base .. ':recent', intArg(2 * longest + slotMs))
        -- Once a slot (W/60): buckets whose window has emptied, or whose room has come back, leave the indexes.
        for _, index in ipairs({ ':active', ':full' }) do
          rcall('ZREMRANGEBYSCORE', base .. index, '-inf', intArg(nowMs))
          rcall('PEXPIRE', base .. index, intArg(2 * longest + 60000))
        end
      end
    end
  end
end
