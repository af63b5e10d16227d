--[[
  The bucket indexes kept with a throttle's counters (see includes/throttleStats): buckets whose window
  has emptied, or whose room has come back, leave them. The including script defines rcall and includes
  intArg.
]]
local function pruneThrottleIndexes(base, nowMs, longest)
  for _, index in ipairs({ ':active', ':full' }) do
    rcall('ZREMRANGEBYSCORE', base .. index, '-inf', intArg(nowMs))
    rcall('PEXPIRE', base .. index, intArg(2 * longest + 60000))
  end
end
