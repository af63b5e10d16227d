--[[
  How long a held job may wait (Throttle.maxWait), in the queue's slot:
    <queueBase>:state        field mw: "<encoded throttle name>=<ms>,..." for the queue's throttles that declare
                             one (lua/publishQueueConfig-n.lua)
    <queueBase>:deadlines    ZSET "<class>#<job id>" -> the ms by which the job must have left its class: when it
                             started waiting on a full bucket, plus the shortest maxWait among its class's
                             throttles; or that moment itself when the bucket's backlog and limits already put its
                             start past that (an estimate)
    <queueBase>:deadline-why HASH "<class>#<job id>" -> "<encoded throttle>|<bucket>|<estimate ms>": a deadline an
                             estimate brought forward
  A job gets its deadline as it starts waiting (statsNotes.started) and loses it as it leaves its class's list for
  any reason (statsNotes.ended). A delivery script takes a job past its deadline out of its class before anything
  else and delivers it marked (the job's field thw: why), counting nothing in any bucket; the worker fails it with
  ThrottleWaitTimeoutError before its processor (src/worker/ThrottledWorker.ts). So a job is never delivered to run
  after its deadline: a call expires every job past it while it has slots left, and delivers others only then.
  An estimate is the room source's (includes/exactRoom: the bucket's counters, each window giving N a window and
  a rate n a period from now; none in leased delivery, where the room is the grantor's) for the jobs of this queue
  waiting on the bucket, this one last. It never counts later than the room can come, so a job failed at once
  could not have gone in time by these limits.
  The including script defines rcall and includes schedulerKeys.
]]
local deadlines = { loaded = false, byName = false }

-- The state's field mw as read (false or nil: none), for a script that reads the state hash anyway.
function deadlines.read(text)
  deadlines.loaded = true
  if not text or text == '' then return end
  local byName = {}
  for name, ms in string.gmatch(text, '([^=,]+)=(%d+)') do byName[name] = tonumber(ms) end
  deadlines.byName = byName
end

-- The queue's longest waits ({ [encoded name] = ms }), or false when none is declared: read once a script run.
function deadlines.of(queueBase)
  if not deadlines.loaded then deadlines.read(rcall('HGET', queueBase .. ':state', 'mw')) end
  return deadlines.byName
end

-- The shortest maxWait among the class's throttles, with that throttle's bucket; nil when none declares one.
function deadlines.ofClass(queueBase, member)
  local byName = deadlines.of(queueBase)
  if not byName then return nil end
  local _, buckets = parseClass(member)
  local least, leastBucket = nil, nil
  for i = 1, #buckets do
    local ms = byName[buckets[i].name]
    if ms and (least == nil or ms < least) then least, leastBucket = ms, buckets[i] end
  end
  return least, leastBucket
end

-- The job starts waiting on a full bucket at nowMs; estimateAtUs (nil: none) is when the room source says it could
-- go, on `bucket`. A deadline already set stays (its first wait counts).
function deadlines.started(queueBase, member, jobId, nowMs, bucket, estimateAtUs)
  local maxWait = deadlines.ofClass(queueBase, member)
  if not maxWait then return end
  local entry = member .. '#' .. jobId
  local deadline = nowMs + maxWait
  if estimateAtUs and estimateAtUs > deadline * 1000 then
    if rcall('ZADD', queueBase .. ':deadlines', 'NX', nowMs, entry) == 1 then
      rcall('HSET', queueBase .. ':deadline-why', entry, bucket.name .. '|' .. bucket.bucket .. '|' .. math.ceil(estimateAtUs / 1000 - nowMs))
    end
    return
  end
  rcall('ZADD', queueBase .. ':deadlines', 'NX', deadline, entry)
end

-- The job left its class's list: delivered, expired, released, reclassified or removed.
function deadlines.ended(queueBase, entry)
  if not deadlines.of(queueBase) then return end
  if rcall('ZREM', queueBase .. ':deadlines', entry) == 1 then rcall('HDEL', queueBase .. ':deadline-why', entry) end
end

-- Up to `limit` entries past their deadline at nowMs, earliest first.
function deadlines.due(queueBase, nowMs, limit)
  if limit <= 0 or not deadlines.of(queueBase) then return {} end
  return rcall('ZRANGEBYSCORE', queueBase .. ':deadlines', '-inf', nowMs, 'LIMIT', 0, limit)
end

-- The earliest deadline (ms), or nil.
function deadlines.earliestMs(queueBase)
  if not deadlines.of(queueBase) then return nil end
  local first = rcall('ZRANGE', queueBase .. ':deadlines', 0, 0, 'WITHSCORES')
  return tonumber(first[2])
end

-- Why the job fails (its field thw, which the worker makes ThrottleWaitTimeoutError's message of):
-- "<encoded throttle>|<bucket>|<would|waited>|<ms>|<maxWait ms>".
function deadlines.reason(queueBase, member, jobId, nowMs)
  local entry = member .. '#' .. jobId
  local maxWait, bucket = deadlines.ofClass(queueBase, member)
  local why = rcall('HGET', queueBase .. ':deadline-why', entry)
  if why then
    local name, segment, estimate = string.match(why, '^([^|]*)|(.*)|(%d+)$')
    local own = (deadlines.of(queueBase) or {})[name] or maxWait or 0
    return name .. '|' .. segment .. '|would|' .. estimate .. '|' .. own
  end
  local deadline = tonumber(rcall('ZSCORE', queueBase .. ':deadlines', entry)) or nowMs
  maxWait = maxWait or 0
  return (bucket and bucket.name or '') .. '|' .. (bucket and bucket.bucket or '') .. '|waited|' .. (nowMs - deadline + maxWait) .. '|' .. maxWait
end
