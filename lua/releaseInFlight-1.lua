--[[
  Takes jobs that ended (completed, failed, moved to delayed or back to wait) out of the concurrency counts of
  the buckets they were delivered from (includes/inFlightCounter), and wakes the queues whose classes wait on
  those buckets. A job still in flight (delivered again since, or its end not written yet) keeps counting;
  one never counted is left alone. Every key is in the queue's slot (exact delivery).

  Input:
    KEYS[1] the queue's in-flight index (HASH job id -> the counters it is in)
    ARGV[1] the queue base of our keys   ARGV[2..] ids of jobs whose processing ended

  Output: the number of counts released
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/intArg"
--- @include "includes/inFlightCounter"

local now = nowUs()
local released = 0
for i = 2, #ARGV do released = released + inFlightKind.giveBack(KEYS[1], ARGV[1], ARGV[i], now) end
return released
