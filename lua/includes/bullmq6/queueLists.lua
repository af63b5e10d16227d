--[[
  Where the installed bullmq's line keeps a queue's waiting jobs, for scripts that read or write them:
  bullmq 6 keeps them in wait whether or not the queue is paused (the pause is meta's `paused` flag).
  lua/includes/bullmq5/queueLists.lua defines the same functions for bullmq 5; a script includes
  "bullmqLine/queueLists" and gets its line's (src/lua/luaBundler.ts).

  queueTargetList(metaKey, activeKey, waitKey, keyPrefix)
    -> the list waiting jobs go to, isPausedOrMaxed, and meta's global rate limit (max, duration), as bullmq
       5's getTargetQueueList answers
  waitingListOf(metaKey, waitKey, keyPrefix) -> the list a job put back to waiting goes to
]]
--- @include "bullmq/includes/getQueueMetadata"

local function queueTargetList(metaKey, activeKey, waitKey, keyPrefix)
  local isPausedOrMaxed, rateLimitMax, rateLimitDuration = getQueueMetadata(metaKey, activeKey, waitKey)
  return waitKey, isPausedOrMaxed, rateLimitMax, rateLimitDuration
end

local function waitingListOf(metaKey, waitKey, keyPrefix)
  return waitKey
end
