--[[
  A job put back held because its processor would have started too late (src/worker/lateStarts/startDeadlines.ts): its
  delivery stops counting in the queue's statistics of each throttle it was noted in (includes/
  throttleStatsNotes: the total and the slot of :recent it went into), so that it counts once when it is
  delivered again, and the classes waiting on its buckets look again now (the job, back in wait, is delivered
  once it is classified; the tokens it was counted in were given back by lua/returnTokens-n.lua). It runs once
  the job is back in wait, marked to go first there (lua/markPutBack-2.lua). Every key is in the queue's slot.
  In leased delivery the spend also leaves the queue's history (includes/queueHistory: <queueBase>:h:<W>/<bucket
  id>, W the throttle's longest window as its :stats says, as the delivery script read it): the job never
  started, and a grantor that lost its counts would count it again from there for W (its tokens were given
  back to the grantor already). Exact delivery keeps no history: there is none to take it from.

  Input:
    KEYS[1] the queue's wakeups (ZSET bucket id -> us)   KEYS[2] its lease-room (HASH bucket id -> us)
    KEYS[3] bullmq's marker of the queue
    KEYS[4..] for each bucket of the job, the queue's :stats and :recent of the bucket's throttle
    ARGV[1] the delivery script's Redis time in us (the slot of :recent it was noted in, the history's spend)
    ARGV[2] the queue's base of our keys (<prefix>:<queue>::throttle)
    ARGV[3..] for each bucket, its id ("<encoded name>=<bucket segment>") and the units the job spent there,
    in the order of KEYS[4..]
    (test builds read one more trailing ARGV, a clock offset in ms: the buckets are counted from KEYS)

  Output: the number of buckets woken
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/intArg"
--- @include "includes/wakeBucket"
--- @include "includes/windowCounter"
--- @include "includes/queueHistory"

local grantUs = tonumber(ARGV[1])
local grantMs = math.floor(grantUs / 1000)
local queueBase = ARGV[2]
local now = nowUs()
local nowArg = intArg(now)
local woken = 0
for i = 1, (#KEYS - 3) / 2 do
  local statsKey = KEYS[2 + 2 * i]
  local recentKey = KEYS[3 + 2 * i]
  local bucketId, units = ARGV[1 + 2 * i], tonumber(ARGV[2 + 2 * i])
  -- Keys that lapsed or were never written (a throttle without a longest window yet) have nothing to take back.
  if tonumber(rcall('HGET', statsKey, 'delivered') or 0) > 0 then rcall('HINCRBY', statsKey, 'delivered', -1) end
  local longest = tonumber(rcall('HGET', statsKey, 'longest'))
  if longest then
    local slot = intArg(math.floor(grantMs / math.max(1, math.floor(longest / 60))))
    if tonumber(rcall('HGET', recentKey, slot) or 0) > 0 then rcall('HINCRBY', recentKey, slot, -1) end
  end
  -- The window includes/leasedRoom's longestOf read from the same field.
  local windowMs = longest or queueHistory.FALLBACK_WINDOW_MS
  local history = queueHistory.key(queueBase, windowMs, bucketId)
  if rcall('EXISTS', history) == 1 then
    local counter = loadCounter(history, queueHistory.MAX, windowMs, now)
    removeTokens(counter, grantUs, 0, now, units)
    saveCounter(counter)
  end
  if wakeBucket(KEYS[1], KEYS[2], bucketId, nowArg) then woken = woken + 1 end
end
if woken > 0 then rcall('ZADD', KEYS[3], 0, '0') end
return woken
