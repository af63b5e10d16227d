--[[
  The KEYS and ARGV of the delivery scripts (takeNextJobs-19.lua and takeLeasedJobs-19.lua share them; the
  header of takeNextJobs-19.lua documents each), as the locals includes/takeJobsBody reads, and the
  includes it needs. The including script defines `local rcall = redis.call`.
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

local waitKey, activeKey, prioritizedKey, eventsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local delayedKey, metaKey, pcKey, markerKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local readyJobsKey, readyClassesKey, wakeupsKey, stateKey = KEYS[9], KEYS[10], KEYS[11], KEYS[12]
-- KEYS[17], the put-back jobs, is includes/takeJobsBody's putBack.key (a field, not a local: the main chunk is at 200).
local classesKey, staleKey, classStateKey, removedHeldKey = KEYS[13], KEYS[14], KEYS[15], KEYS[16]
local limiterKey, refusedKey = KEYS[18], KEYS[19]
local jobPrefix = ARGV[1]
local lockDuration = ARGV[2]
local workerName = ARGV[3] ~= '' and ARGV[3] or nil
local queueBase, throttlePrefix = ARGV[4], ARGV[5]
local budget, leaseMs = tonumber(ARGV[6]), tonumber(ARGV[7])
local callerGen = ARGV[8]
local workerLimiterMax, workerLimiterMs = tonumber(ARGV[9]), tonumber(ARGV[10])
local callerMs = tonumber(ARGV[11])
local K = tonumber(ARGV[12])
-- After a restart or promotion of the node holding the counters: 'hold' (for the longest window) or 'resume' (includes/recoveryHold).
local afterRestart = ARGV[13 + K]
-- When this call is too late to count (us, this node's clock; 0: no limit): see includes/exactRoom.
local lateAfterUs = tonumber(ARGV[14 + K]) or 0

