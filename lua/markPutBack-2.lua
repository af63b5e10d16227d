--[[
  Marks a job its worker is putting back (its processor would have started too late: src/worker/lateStarts/startDeadlines.ts)
  before bullmq moves it from active to wait, so that whichever delivery meets it there places it first among its
  priority again (includes/freshJobs, lua/classifyJobs-7.lua), as bullmq places a job its processor
  rate-limited, rather than behind the jobs held while it was out. Its room goes back after the move
  (lua/returnTokens-n.lua, lua/lateStartPutBack-n.lua): the job is in wait, first, before its class is woken.

  A job its processor sent back with RetryAfterError is marked too (src/worker/ThrottledWorker.ts), as bullmq
  places a job its processor rate-limited first in wait.

  A job put back for starting late also has the start its delivery counted in attemptsStarted taken back
  (bullmq's prepareJobForProcessing adds one as it moves a job to active): its processor never ran, so a put-back
  costs no attempt, and a worker's maxStartedAttempts (bullmq fails a job started that many times) does not count
  it. Once per mark, so that a call retried after a lost reply takes back one start, not two.

  Input:
    KEYS[1] the queue's put-back jobs (SET)
    KEYS[2] the job's hash (bullmq's)
    ARGV[1] the job id
    ARGV[2] 1: take back the delivery's start (its processor never ran); 0: keep it (RetryAfterError)

  Output: 1 when the job was not marked yet, else 0
]]
local rcall = redis.call

-- A mark outlives the wait of any job a worker takes again (its delivery takes the mark); a job removed while
-- in wait leaves one behind until then.
local PUT_BACK_TTL_MS = 86400000

local added = rcall('SADD', KEYS[1], ARGV[1])
rcall('PEXPIRE', KEYS[1], PUT_BACK_TTL_MS)
if added == 1 and ARGV[2] == '1' and (tonumber(rcall('HGET', KEYS[2], 'ats')) or 0) > 0 then
  rcall('HINCRBY', KEYS[2], 'ats', -1)
end
return added
