--[[
  The wake of full buckets whose room has come back, before a delivery call looks at any job
  (includes/takeJobsBody). A class whose bucket was full waits on it (class-state, the bucket's waiters in
  queue order, the bucket in wakeups at the time it has room), and none of its jobs is looked at meanwhile:
  a wake hands waiting classes back to ready-classes, to be looked at in queue order with the rest. A bucket
  wakes only as many as it has room for (at most WAKE_BATCH_MAX): a class woken into a bucket still full
  would only be filed again, at several commands a class. A call wakes at most WAKE_BUCKETS buckets, so that
  its cost does not grow with the buckets due; the others are still due for the next call. So that their
  classes still go in queue order (priority first) with the ones woken, the first waiter of each of the next
  BOUND_BUCKETS due is read (one ZRANGE each, no counter): the lowest of their orders bounds what this call
  delivers (includes/takeJobsBody stops before a job ordered after it, and asks for another call at once).
  Exact delivery only: a leased bucket may stay due with its room on its way, which would hold the bound for
  as long; there the classes whose tokens come first go first. Past WAKE_BUCKETS + BOUND_BUCKETS due at once,
  the order holds among those.
  Needs rcall and the room source (roomSource, roomLeft, roomReturnsAtUs, comingRoom: see
  includes/takeJobsBody). Defines wakeDueBuckets(input, now) (input: includes/takeJobsInput's table; now:
  the call's time, us), which returns that bound (nil: none).
]]
--- @include "intArg"
--- @include "schedulerKeys"
--- @include "throttleStatsNotes"

local function wakeDueBuckets(input, now)
  -- Buckets whose room has come back: hand as many of their waiting classes back as they have room for.
  local WAKE_BATCH_MAX = 64
  local WAKE_BUCKETS, BOUND_BUCKETS = 8, 56
  local nowArg = intArg(now)
  local due = rcall('ZRANGEBYSCORE', input.wakeupsKey, '-inf', nowArg, 'LIMIT', 0, comingRoom and WAKE_BUCKETS or WAKE_BUCKETS + BOUND_BUCKETS)
  local bound = nil
  for i = WAKE_BUCKETS + 1, #due do
    local head = rcall('ZRANGE', waitersKey(input.queueBase, due[i]), 0, 0, 'WITHSCORES')
    if #head > 0 and (bound == nil or tonumber(head[2]) < bound) then bound = tonumber(head[2]) end
    due[i] = nil
  end
  for _, bucketId in ipairs(due) do
    local source = roomSource(parseBucketId(bucketId))
    local room = WAKE_BATCH_MAX
    if source then room = math.min(roomLeft(source), WAKE_BATCH_MAX) end
    if room == 0 and comingRoom and comingRoom.lookAgain(source) then room = WAKE_BATCH_MAX end
    local waiting = waitersKey(input.queueBase, bucketId)
    if room > 0 then
      local woken = rcall('ZPOPMIN', waiting, room)
      if room < WAKE_BATCH_MAX and #woken > 0 and string.find(woken[#woken - 1], '$', 1, true) then
        -- Classes with costs: one that needs more than the room waits again, and cheaper ones behind it may fit.
        local more = rcall('ZPOPMIN', waiting, WAKE_BATCH_MAX - room)
        for i = 1, #more do woken[#woken + 1] = more[i] end
      end
      local released = 0
      for i = 1, #woken, 2 do
        rcall('ZADD', input.readyClassesKey, woken[i + 1], woken[i])
        rcall('HDEL', input.classStateKey, woken[i])
        released = released + rcall('ZCARD', classJobsKey(input.queueBase, woken[i]))
      end
      statsNotes.waiting(input.queueBase, parseBucketId(bucketId), -released)
      if released > 0 then rcall('HINCRBY', input.stateKey, 'blocked', -released) end
    end
    if rcall('EXISTS', waiting) == 0 then
      rcall('ZREM', input.wakeupsKey, bucketId)
    elseif room > 0 or source == nil then
      -- More waiters than room: look again on the next call (a refusal reschedules it exactly).
      rcall('ZADD', input.wakeupsKey, nowArg, bucketId)
    else
      rcall('ZADD', input.wakeupsKey, intArg(roomReturnsAtUs(source)), bucketId)
    end
  end
  return bound
end
