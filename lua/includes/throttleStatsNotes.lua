--[[
  The statistics a change in what a full bucket holds updates (see includes/throttleStats for the keys):
  scripts that move held jobs without delivering any (classifyJobs, reclaimStaleJobs) need only these.
]]
--- @include "intArg"
--- @include "schedulerKeys"

-- delta jobs start (+) or stop (-) being held by a full bucket.
local function noteWaiting(throttlePrefix, bucket, delta)
  if delta == 0 then return end
  local base = throttleBase(throttlePrefix, bucket.name)
  local left = tonumber(rcall('ZINCRBY', base .. ':waiting', delta, bucket.bucket))
  if left <= 0 then rcall('ZREM', base .. ':waiting', bucket.bucket) end
  rcall('HINCRBY', base .. ':stats', 'waiting', delta)
  if delta > 0 then rcall('HINCRBY', base .. ':stats', 'limited', delta) end
end

local function noteFull(throttlePrefix, bucket, roomAtMs)
  rcall('ZADD', throttleBase(throttlePrefix, bucket.name) .. ':full', intArg(roomAtMs), bucket.bucket)
end
