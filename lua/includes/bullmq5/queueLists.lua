--[[
  Where the installed bullmq's line keeps a queue's waiting jobs (see lua/includes/bullmq6/queueLists.lua
  for the contract): bullmq 5 moves them to the `paused` LIST while the queue is paused (wait is renamed to
  paused, and back on resume, which overwrites the other list: a job pushed to wait while paused would be
  lost on resume). The paused key is composed from the queue's key prefix, as bullmq composes job keys, so
  it hashes with the queue's other keys.
]]
--- @include "bullmq/includes/getTargetQueueList"
--- @include "bullmq/includes/isQueuePaused"

local function queueTargetList(metaKey, activeKey, waitKey, keyPrefix)
  return getTargetQueueList(metaKey, activeKey, waitKey, keyPrefix .. 'paused')
end

local function waitingListOf(metaKey, waitKey, keyPrefix)
  if isQueuePaused(metaKey) then return keyPrefix .. 'paused' end
  return waitKey
end
