--[[
  The statistics a queue keeps of each throttle as it holds and delivers jobs, in the queue's own slot
  (under queueStatsBase(queueBase, <encoded name>)), so that every script that moves a queue's jobs can
  keep them whichever slot the throttle's counters are in. ThrottleAdmin adds them up over the queues
  where the throttle is declared:
    :waiting  ZSET bucket -> this queue's jobs held because that bucket is full
    :stats    HASH delivered, limited (totals since the keys exist: deliveries, and jobs that started
              waiting on a full bucket, each once, counted for the throttle of the first bucket that held
              it), waiting (the sum of :waiting),
              longest (the throttle's longest window in ms, written by publishQueueConfig), expired
              (leased tokens found expired unused: includes/leasedRoom)
    :recent   HASH slot of longest/60 -> deliveries in it
  Scripts that move held jobs without delivering any (classifyJobs, reclaimStaleJobs) need only noteWaiting.
]]
--- @include "intArg"
--- @include "schedulerKeys"

-- delta jobs start (+) or stop (-) being held by a full bucket.
local function noteWaiting(queueBase, bucket, delta)
  if delta == 0 then return end
  local base = queueStatsBase(queueBase, bucket.name)
  local left = tonumber(rcall('ZINCRBY', base .. ':waiting', delta, bucket.bucket))
  if left <= 0 then rcall('ZREM', base .. ':waiting', bucket.bucket) end
  rcall('HINCRBY', base .. ':stats', 'waiting', delta)
end

-- count jobs start waiting on the full bucket for the first time: filed into a class list that waits on
-- it. A class woken and found full again waits once more with the same jobs, which stay counted once.
local function noteLimited(queueBase, bucket, count)
  if count > 0 then rcall('HINCRBY', queueStatsBase(queueBase, bucket.name) .. ':stats', 'limited', count) end
end

local deliveredByThrottle = {}

local function noteDelivered(bucket)
  deliveredByThrottle[bucket.name] = (deliveredByThrottle[bucket.name] or 0) + 1
end

-- Writes the deliveries noted in this run; calls onNewSlot(encodedName, longestMs) for each throttle
-- whose :recent began a new slot (about once every longest/60 while it delivers).
local function saveDeliveryNotes(queueBase, nowMs, onNewSlot)
  for encodedName, count in pairs(deliveredByThrottle) do
    local base = queueStatsBase(queueBase, encodedName)
    rcall('HINCRBY', base .. ':stats', 'delivered', count)
    local longest = tonumber(rcall('HGET', base .. ':stats', 'longest'))
    if longest then
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
        if onNewSlot then onNewSlot(encodedName, longest) end
      end
    end
  end
end
