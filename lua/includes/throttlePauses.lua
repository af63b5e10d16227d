--[[
  Pauses of a throttle (ThrottleAdmin.pause, RetryAfterError), kept in the namespace's slot:
    <throttle base>:paused   HASH '*' (every bucket) or a bucket segment -> until (ms, Redis clock; 0: until
                             resumed); the key expires with its latest finite pause (none while one is open-ended)
  The throttle's limits hash says whether that key is worth reading (field p, kept by lua/publishLimits-n.lua
  while the key exists), so that a throttle nobody paused costs no command.
  A paused bucket has no room until its pause ends; an open-ended pause says room may return a second on
  (PAUSE_LOOK_MS), so that classes waiting on it look again, and ThrottleAdmin.resume wakes them at once
  (lua/wakeBuckets-3.lua). The including script defines rcall.
]]
local pausedUntilUs
do
local PAUSE_LOOK_MS = 1000
local pausesByBase = {}

-- When the pause on this bucket of the throttle (its key base; its limits' field p) ends, in us; 0: not paused.
function pausedUntilUs(base, bucket, flagged, nowUs)
  if not flagged then return 0 end
  local pauses = pausesByBase[base]
  if pauses == nil then
    pauses = { key = base .. ':paused', all = rcall('HGET', base .. ':paused', '*') or false, buckets = {} }
    pausesByBase[base] = pauses
  end
  local own = pauses.buckets[bucket]
  if own == nil then
    own = rcall('HGET', pauses.key, bucket) or false
    pauses.buckets[bucket] = own
  end
  local untilUs = 0
  local lookUs = nowUs + PAUSE_LOOK_MS * 1000
  for _, text in ipairs({ pauses.all, own }) do
    if text then
      local untilMs = tonumber(text)
      local atUs = untilMs == 0 and lookUs or math.min(untilMs * 1000, lookUs)
      if untilMs ~= 0 and untilMs * 1000 <= nowUs then atUs = 0 end
      if atUs > untilUs then untilUs = atUs end
    end
  end
  return untilUs
end
end -- of the block that keeps the helpers local
