--[[
  Lifts pauses of a throttle (ThrottleAdmin.resume): every pause of it, or the pause of one bucket. Classes
  waiting on its buckets look again at once when the caller wakes each queue (lua/wakeBuckets-3.lua).

  Input:
    KEYS[1] the throttle's pauses (HASH, <throttle base>:paused)   KEYS[2] its limits (HASH: field p)
    ARGV[1] '' (every pause of the throttle) or '*' or a bucket segment

  Output: the number of pauses lifted
]]
local rcall = redis.call

local lifted
if ARGV[1] == '' then
  lifted = rcall('HLEN', KEYS[1])
  rcall('DEL', KEYS[1])
else
  lifted = rcall('HDEL', KEYS[1], ARGV[1])
end
if rcall('EXISTS', KEYS[1]) == 0 then rcall('HDEL', KEYS[2], 'p') end
return lifted
