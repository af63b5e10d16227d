--[[
  The live value of a throttle's adaptive limit in one bucket (includes/adaptiveLimit): read it, or lower it
  for a 429 from the API (a RetryAfterError or SlowDownError thrown by a job of the throttle), at most once
  a period.

  Input:
    KEYS[1] the bucket's adaptive limit (STRING, <throttle base>:b:<bucket>:a)
    KEYS[2] the throttle's limits (HASH; field a: the adaptive limit, as published)
    KEYS[3] the throttle's lowered buckets (ZSET <throttle base>:adapted, bucket segment -> until when (ms) it
            stays below the ceiling: what throttleStats counts and lists)
    ARGV[1] '1' to lower it, '0' to read it
    ARGV[2] the bucket's segment

  Output: { nowMs, changed (1 or 0), live before, live after, ceiling, min, the latest decrease (ms; 0 once
  back at the ceiling) }; { nowMs, -1 } when the throttle has no adaptive limit (none published, or its workers'
  declarations lapsed)
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/adaptiveLimit"

local nowMs = math.floor(nowUs() / 1000)
local spec = adaptiveLimit.parse(rcall('HGET', KEYS[2], 'a') or '')
if not spec then return { nowMs, -1 } end
local changed, before, after, sinceMs = false, nil, nil, nil
if ARGV[1] == '1' then
  before, after, changed, sinceMs = adaptiveLimit.decrease(spec, KEYS[1], nowMs)
  if changed then adaptiveLimit.noteLowered(spec, KEYS[3], ARGV[2], after, nowMs) end
else
  before, sinceMs = adaptiveLimit.live(spec, rcall('GET', KEYS[1]), nowMs)
  after = before
end
-- When it was lowered, while it is below its ceiling.
if after >= spec.ceiling then sinceMs = nil end
return { nowMs, changed and 1 or 0, before, after, spec.ceiling, spec.min, sinceMs or 0 }
