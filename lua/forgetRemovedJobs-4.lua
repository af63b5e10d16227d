--[[
  Keeps the held count honest when someone removes a held job (job.remove(), queue.clean): bullmq deletes
  the job and records a `removed` event with prev "unknown", since the job was in none of its lists.
  This reads the queue's events since the last look and stops counting such jobs; the delivery script
  drops their ids when it reaches them without counting them a second time.

  Input:
    KEYS[1] events (STREAM)   KEYS[2] state (HASH: held, eventsCursor)   KEYS[3] intake   KEYS[4] removed-held (SET)
    ARGV[1] most events to read

  Output: { forgotten }
]]
local rcall = redis.call
local eventsKey, stateKey, intakeKey, removedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]

local cursor = rcall('HGET', stateKey, 'eventsCursor')
if not cursor then
  -- Only removals from now on: older ones were never ours to count.
  local last = rcall('XREVRANGE', eventsKey, '+', '-', 'COUNT', 1)[1]
  rcall('HSET', stateKey, 'eventsCursor', last and last[1] or '0-0')
  return { 0 }
end
local entries = rcall('XRANGE', eventsKey, '(' .. cursor, '+', 'COUNT', tonumber(ARGV[1]))
local forgotten = 0
for _, entry in ipairs(entries) do
  local fields = entry[2]
  local event, jobId, prev
  for i = 1, #fields, 2 do
    if fields[i] == 'event' then event = fields[i + 1]
    elseif fields[i] == 'jobId' then jobId = fields[i + 1]
    elseif fields[i] == 'prev' then prev = fields[i + 1] end
  end
  if event == 'removed' and prev == 'unknown' and jobId and not rcall('ZSCORE', intakeKey, jobId)
      and rcall('SADD', removedKey, jobId) == 1 then
    forgotten = forgotten + 1
  end
end
if #entries > 0 then rcall('HSET', stateKey, 'eventsCursor', entries[#entries][1]) end
if forgotten > 0 then rcall('HINCRBY', stateKey, 'held', -forgotten) end
return { forgotten }
