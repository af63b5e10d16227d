--[[
  What a queue in leased delivery delivered lately, per bucket, as its delivery script recorded it
  (includes/leasedRoom): for a grantor that lost its counts to count them again (reportQueueHistory-1.lua).

  Input:
    KEYS[1]  the queue's history index (ZSET "<W>/<bucket id>" -> ms that history empties)
    ARGV[1]  queue base of our keys
    (test builds read one more trailing ARGV, a clock offset in ms)

  Output:
    { wholeForUs, B, then per bucket: bucket id, S, then S pairs (agoUs, count) }
    wholeForUs: how far back the history is whole (since this node's identity was first seen; 0: not at
    all; -1: from the queue's first delivery, the record's whole, lua/takeLeasedJobs-19.lua); agoUs: how
    long ago the latest of `count` deliveries was (one pair per slot of the counter).
]]
local rcall = redis.call

--- @include "includes/nowUs"
--- @include "includes/intArg"
--- @include "includes/windowCounter"

local indexKey, queueBase = KEYS[1], ARGV[1]
local now = nowUs()
local nowMs = math.floor(now / 1000)
local record = rcall('HMGET', queueBase .. ':node', 'since', 'whole')
local since = tonumber(record[1])
local reply = { since and (now - since * 1000) or 0, 0 }
if since and record[2] == '1' then reply[1] = -1 end
for _, member in ipairs(rcall('ZRANGEBYSCORE', indexKey, '(' .. intArg(nowMs), '+inf')) do
  local slash = string.find(member, '/', 1, true)
  local windowMs, bucketId = tonumber(string.sub(member, 1, slash - 1)), string.sub(member, slash + 1)
  local counter = loadCounter(queueBase .. ':h:' .. member, 0, windowMs, now)
  local countAt = #reply + 2
  reply[#reply + 1] = bucketId
  reply[#reply + 1] = 0
  for _, slot in ipairs(slotsInOrder(counter)) do
    if slot.releaseUs > now and slot.count > 0 then
      reply[#reply + 1] = now - (slot.releaseUs - windowMs * 1000)
      reply[#reply + 1] = slot.count
      reply[countAt] = reply[countAt] + 1
    end
  end
  reply[2] = reply[2] + 1
end
return reply
