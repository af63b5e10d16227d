--[[
  A leased queue's history: what it spent of each bucket, for its throttle's longest window W, as a window
  counter (includes/windowCounter) in the queue's slot, so that a grantor that lost its counts can count them
  again (lua/reportQueueHistory-1.lua). Written by includes/leasedRoom as tokens are spent, taken back by
  lua/lateStartPutBack-n.lua for a job that did not start. One table: the delivery scripts' main chunk is near
  Lua's 200 locals.
]]
local queueHistory = {}

-- The history's window where the throttle's :stats has no longest window yet (its `longest` field unwritten).
queueHistory.FALLBACK_WINDOW_MS = 60000
-- A history counter never refuses (the grantor decides): its limit, as large as a count can be.
queueHistory.MAX = 1e15

-- <queueBase>:h:<W>/<bucket id>
function queueHistory.key(queueBase, windowMs, bucketId)
  return queueBase .. ':h:' .. windowMs .. '/' .. bucketId
end
