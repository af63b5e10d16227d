--[[
  Counts a started job's tokens for longer, in the windows that counted them with a shorter lease and in its rates: its processor
  was called, or returned from its synchronous start, later after the delivery call than that lease
  (src/worker/lateStarts/startDeadlines.ts). The worker checks the deadline right before calling the processor,
  but a process descheduled between that check and the processor's first lines (a loaded machine: 20-50 ms
  seen with every core busy) starts it later than its tokens were counted for.
  Why moving the tokens to a later release keeps the windows exact: a token granted at g with lease L is
  counted until g + W + L, and the grants that could meet a start at s = g + L + d within one window W are those
  after g + W + L (every one before counted the token). The worker sends this call when the processor returns,
  right after s, so for any d shorter than W (less a call's time) it lands before those grants: the token is
  then counted until g + W + L + d, as if its lease had been L + d all along, and the proof of includes/
  windowCounter holds for it with that lease.
  A rate is moved the same way (includes/rateCounter's rateKind.countLater): its TAT goes byUs later, byUs the
  start's excess over the job's deadline (at least its excess over the rate's own lease, which the job's deadline
  never exceeds).
  The record's hmax takes the longer lease too, so that a failover's recovery counts the tokens for as long
  (includes/grantorRecovery).

  Input:
    KEYS[1]     the namespace's grantor record (HASH; its hmax: the longest lease a delivery was counted with)
    KEYS[2..K]  window counters and rates
    ARGV[1]     toLeaseMs: the lease the tokens count with from now on
    ARGV[2]     grantUs: the delivery script's Redis time (us), when they were counted
    ARGV[3]     G, the number of (bucket, window) groups; then for each group:
                  counter index (into KEYS), window ms, fromLeaseMs (the lease it was counted with), count
    then R, the number of rates; for each: key index, afterUs (the TAT the job's grant wrote), byUs
    (test builds read one more trailing ARGV, a clock offset in ms)
  The counters are lone counters, named by key (no limits are read), as lua/returnTokens-n.lua's.

  Output:
    { nowUs, moved, missed }: moved, the window groups whose tokens were still counted and now count until the later
    release (a group whose release had passed is counted again until it: the tokens count at least as long as
    they must), and the rates moved; missed, what the call came too late for: the window groups whose release
    had passed (a grant since may have used it) and the rates that granted since the job's grant (their grants
    saw the earlier TAT). The proof above needs neither to have happened: starts around this one may exceed the
    limit (the process was paused longer than the window, or a rate's interval, less a call's time).
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/windowCounter"
--- @include "includes/countLonger"
--- @include "includes/rateCounter"
--- @include "includes/intArg"

local now = nowUs()
local toLeaseMs = tonumber(ARGV[1])
local grantUs = tonumber(ARGV[2])
local groups = tonumber(ARGV[3])
local counters = {}
local moved, missed = 0, 0
for g = 1, groups do
  local at = 4 + (g - 1) * 4
  local index, windowMs = tonumber(ARGV[at]), tonumber(ARGV[at + 1])
  local fromLeaseMs, count = tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3])
  local counter = counters[index]
  if counter == nil then
    counter = loadCounter(KEYS[index], 0, windowMs, now)
    counters[index] = counter
  end
  if toLeaseMs > fromLeaseMs then
    if countTokensLonger(counter, grantUs, fromLeaseMs, toLeaseMs, now, count) then moved = moved + 1 else missed = missed + 1 end
  end
end
for _, counter in pairs(counters) do saveCounter(counter) end
local rates = tonumber(ARGV[4 + groups * 4])
for r = 1, rates do
  local at = 5 + groups * 4 + (r - 1) * 3
  local rateMoved, grantedSince = rateKind.countLater(KEYS[tonumber(ARGV[at])], tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]), toLeaseMs, now)
  if rateMoved then moved = moved + 1 end
  if grantedSince then missed = missed + 1 end
end

-- A record that is gone went with the counts (a restart): the recovery that notices it holds the throttles.
if rcall('EXISTS', KEYS[1]) == 1 and toLeaseMs > tonumber(rcall('HGET', KEYS[1], 'hmax') or 0) then
  rcall('HSET', KEYS[1], 'hmax', toLeaseMs)
end
return { now, moved, missed }
