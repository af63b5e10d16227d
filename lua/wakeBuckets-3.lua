--[[
  Wakes the classes of one queue that wait on a throttle's buckets (all of them, or one), so that the next
  delivery call looks at them again: after ThrottleAdmin.resume, they need not wait for the time their pause
  said. In leased delivery, the room the grantor said those buckets have again is due now (so that their
  waiters are woken and asked for: includes/leasedRoom comingRoom.lookAgain). bullmq's blocked main loop is
  woken through the queue's marker. Every key is in the queue's slot.

  Input:
    KEYS[1] the queue's wakeups (ZSET bucket id -> us)   KEYS[2] its lease-room (HASH bucket id -> us)
    KEYS[3] bullmq's marker of the queue
    ARGV[1] the throttle's encoded name   ARGV[2] a bucket segment, or '' for every bucket of the throttle

  Output: the number of buckets woken
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/intArg"
--- @include "includes/wakeBucket"
local head = ARGV[1] .. '='
local ids = {}
if ARGV[2] ~= '' then
  ids[1] = head .. ARGV[2]
else
  -- Only buckets with waiting classes are in wakeups; a resume is rare enough to read them all.
  for _, id in ipairs(rcall('ZRANGE', KEYS[1], 0, -1)) do
    if string.sub(id, 1, #head) == head then ids[#ids + 1] = id end
  end
end
local nowArg = intArg(nowUs())
local woken = 0
for _, id in ipairs(ids) do
  if wakeBucket(KEYS[1], KEYS[2], id, nowArg) then woken = woken + 1 end
end
if woken > 0 then rcall('ZADD', KEYS[3], 0, '0') end
return woken
