--[[
  The KEYS and ARGV of the delivery scripts (takeNextJobs-19.lua and takeLeasedJobs-19.lua share them; the
  header of takeNextJobs-19.lua documents each), as one table, `input` (the call's keys and arguments by
  name: waitKey ... refusedKey, putBackKey, jobPrefix ... K, afterRestart, lateAfterUs), and the includes
  includes/takeJobsBody needs. The including script defines `local rcall = redis.call`.
]]
--- @include "nowUs"
--- @include "intArg"
--- @include "schedulerKeys"
--- @include "throttleStatsNotes"
--- @include "jobOrder"
--- @include "classifyInLua"
--- @include "bullmqLine/queueLists"
--- @include "bullmq/includes/getNextDelayedTimestamp"
--- @include "bullmq/includes/promoteDelayedJobs"
--- @include "bullmq/includes/getRateLimitTTL"
--- @include "bullmq/includes/prepareJobForProcessing"

-- One local, not one per key and argument: a script's main chunk holds at most 200, and the delivery scripts
-- include bullmq's Lua.
local input = {
  waitKey = KEYS[1], activeKey = KEYS[2], prioritizedKey = KEYS[3], eventsKey = KEYS[4],
  delayedKey = KEYS[5], metaKey = KEYS[6], pcKey = KEYS[7], markerKey = KEYS[8],
  readyJobsKey = KEYS[9], readyClassesKey = KEYS[10], wakeupsKey = KEYS[11], stateKey = KEYS[12],
  classesKey = KEYS[13], staleKey = KEYS[14], classStateKey = KEYS[15], removedHeldKey = KEYS[16],
  -- KEYS[17], the put-back jobs (lua/markPutBack-2.lua): read by includes/freshJobs' putBack.
  putBackKey = KEYS[17],
  limiterKey = KEYS[18], refusedKey = KEYS[19],
  jobPrefix = ARGV[1],
  lockDuration = ARGV[2],
  workerName = ARGV[3] ~= '' and ARGV[3] or nil,
  queueBase = ARGV[4], throttlePrefix = ARGV[5],
  budget = tonumber(ARGV[6]), leaseMs = tonumber(ARGV[7]),
  callerGen = ARGV[8],
  workerLimiterMax = tonumber(ARGV[9]), workerLimiterMs = tonumber(ARGV[10]),
  callerMs = tonumber(ARGV[11]),
  K = tonumber(ARGV[12]),
}
-- After a restart or promotion of the node holding the counters: 'hold' (for the longest window) or 'resume' (includes/recoveryHold).
input.afterRestart = ARGV[13 + input.K]
-- When this call is too late to count (us, this node's clock; 0: no limit): see includes/exactRoom.
input.lateAfterUs = tonumber(ARGV[14 + input.K]) or 0
