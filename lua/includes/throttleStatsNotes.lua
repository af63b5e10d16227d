--[[
  The statistics a queue keeps of each throttle as it holds and delivers jobs, in the queue's own slot
  (under queueStatsBase(queueBase, <encoded name>)), so that every script that moves a queue's jobs can
  keep them whichever slot the throttle's counters are in. ThrottleAdmin adds them up over the queues
  where the throttle is declared:
    :waiting  ZSET bucket -> this queue's jobs held because that bucket is full
    :stats    HASH delivered, limited (totals since the keys exist: deliveries, and jobs that started
              waiting on a full bucket, each once, counted for the throttle of the first bucket that held
              it), waiting (the sum of :waiting), heldCount, heldSumMs and held:<i> (of the jobs that waited
              and were delivered: how many, their total wait, and how many waited at most statsNotes.BOUNDS_MS[i],
              beyond the one before; past the last bound, held:<#BOUNDS_MS + 1>),
              longest (the throttle's longest window in ms, written by publishQueueConfig), expired
              (leased tokens found expired unused: includes/leasedRoom)
    :recent   HASH slot of longest/60 -> deliveries in it
    :held     ZSET "<class>#<job id>" -> ms it started waiting on a full bucket of this throttle (the first
              that held it), until it is delivered or leaves its class's list: its oldest is the oldest
              waiting job's age, from its own moment (src/admin/queueThrottleStats.ts)
  Scripts that move held jobs without delivering any (classifyJobs, reclaimStaleJobs) need only
  statsNotes.waiting, started and ended. A job's deadline (includes/deadlines) starts and ends with its wait.
]]
--- @include "intArg"
--- @include "schedulerKeys"
--- @include "deadlines"

-- The notes, in one table: the delivery scripts' main chunk is at Lua's 200 locals with bullmq 5's includes.
-- started/ended: a job's wait on a full bucket, from its start (the job filed into the list of a class that
-- waits on the bucket: a class woken and found full again waits once more with the same jobs, which stay
-- counted once) to its end (delivered, or gone from its class's list).
local statsNotes = {
  held = {},
  -- Upper bounds (ms) of the hold-time histogram's buckets (src/admin/holdTimes.ts has the same).
  BOUNDS_MS = { 100, 1000, 10000, 60000, 300000, 600000, 1800000, 3600000, 21600000, 86400000 },
}

-- delta jobs start (+) or stop (-) being held by a full bucket.
function statsNotes.waiting(queueBase, bucket, delta)
  if delta == 0 then return end
  local base = queueStatsBase(queueBase, bucket.name)
  local left = tonumber(rcall('ZINCRBY', base .. ':waiting', delta, bucket.bucket))
  if left <= 0 then rcall('ZREM', base .. ':waiting', bucket.bucket) end
  rcall('HINCRBY', base .. ':stats', 'waiting', delta)
end

-- The job (jobId of class member) starts waiting on the full bucket now (nowMs), and its deadline with it
-- (includes/deadlines; estimateAtUs: when the room source says it could go, nil when it cannot say).
function statsNotes.started(queueBase, bucket, member, jobId, nowMs, estimateAtUs)
  local base = queueStatsBase(queueBase, bucket.name)
  rcall('HINCRBY', base .. ':stats', 'limited', 1)
  rcall('ZADD', base .. ':held', 'NX', nowMs, member .. '#' .. jobId)
  deadlines.started(queueBase, member, jobId, tonumber(nowMs), bucket, estimateAtUs)
end

-- The job left its class's list (buckets: its class's): delivered (nowMs: its wait joins the histogram of the
-- throttle that held it) or not (nowMs nil: gone, released, reclassified).
function statsNotes.ended(queueBase, member, jobId, buckets, nowMs)
  local entry = member .. '#' .. jobId
  deadlines.ended(queueBase, entry)
  for i = 1, #buckets do
    local name = buckets[i].name
    local key = queueStatsBase(queueBase, name) .. ':held'
    local since = nowMs and rcall('ZSCORE', key, entry)
    -- Delivered: the score says whether this throttle's set holds it, and a ZREM of what is not there is spared.
    if (since or not nowMs) and rcall('ZREM', key, entry) == 1 then
      if since then
        local waited = math.max(0, nowMs - tonumber(since))
        local notes = statsNotes.held[name]
        if not notes then
          notes = { count = 0, sumMs = 0, byBound = {} }
          statsNotes.held[name] = notes
        end
        local bounds = statsNotes.BOUNDS_MS
        local bound = #bounds + 1
        for b = 1, #bounds do
          if waited <= bounds[b] then bound = b break end
        end
        notes.count = notes.count + 1
        notes.sumMs = notes.sumMs + waited
        notes.byBound[bound] = (notes.byBound[bound] or 0) + 1
      end
      return
    end
  end
end

-- Writes the waits of the jobs delivered in this run.
function statsNotes.save(queueBase)
  for name, notes in pairs(statsNotes.held) do
    local key = queueStatsBase(queueBase, name) .. ':stats'
    rcall('HINCRBY', key, 'heldCount', notes.count)
    rcall('HINCRBY', key, 'heldSumMs', notes.sumMs)
    for bound, count in pairs(notes.byBound) do rcall('HINCRBY', key, 'held:' .. bound, count) end
  end
  statsNotes.held = {}
end

-- Deliveries noted in this run, by throttle (in statsNotes: one local fewer in the including script's main chunk).
statsNotes.deliveredByThrottle = {}

function statsNotes.delivered(bucket)
  local counts = statsNotes.deliveredByThrottle
  counts[bucket.name] = (counts[bucket.name] or 0) + 1
end

-- Writes the deliveries noted in this run; calls onNewSlot(encodedName, longestMs) for each throttle
-- whose :recent began a new slot (about once every longest/60 while it delivers).
local function saveDeliveryNotes(queueBase, nowMs, onNewSlot)
  statsNotes.save(queueBase)
  for encodedName, count in pairs(statsNotes.deliveredByThrottle) do
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
