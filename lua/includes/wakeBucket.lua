--[[
  Wakes the classes of a queue that wait on one bucket, so that the next delivery call looks at them again;
  in leased delivery, the room the grantor said the bucket has again is due now (includes/leasedRoom
  comingRoom.lookAgain). The caller wakes bullmq's blocked main loop through the queue's marker.
]]

-- true when classes waited on the bucket (they are due at nowArg, the caller's intArg of nowUs()).
local function wakeBucket(wakeupsKey, leaseRoomKey, bucketId, nowArg)
  if not rcall('ZSCORE', wakeupsKey, bucketId) then return false end
  rcall('ZADD', wakeupsKey, nowArg, bucketId)
  if rcall('HEXISTS', leaseRoomKey, bucketId) == 1 then rcall('HSET', leaseRoomKey, bucketId, nowArg) end
  return true
end
