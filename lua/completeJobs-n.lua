--[[
  Completes several active jobs of one queue in one call, each exactly as the installed bullmq's own
  moveToFinished script does (it is made a function of its KEYS and ARGV, below), without fetching the
  next job: a throttled worker fetches through its delivery script instead. One call per batch pays
  moveToFinished's fixed cost (its prologue and the command itself) once, not once per job.

  Input (K jobs):
    KEYS[1..11]         moveToFinished's KEYS[1..11] for target 'completed' (wait, active, prioritized,
                        events, stalled, limiter, delayed, paused, meta, pc, completed)
    KEYS[11 + j]        job j's key (its KEYS[12])
    KEYS[12 + K]        the metrics key (KEYS[13]), KEYS[13 + K] the marker (KEYS[14])
    KEYS[14 + K]        refused-tokens (SET): the lock token of each job whose completion is refused
    ARGV[1]             K
    ARGV[2 + 9(j-1)..]  job j's moveToFinished ARGV[1..9] as bullmq's moveToCompletedArgs builds them
                        (fetch next '0'; an empty ARGV[9] for no fields to update)

  Output:
    { reply_1, ..., reply_K }: moveToFinished's reply for each job (0, or its negative error code), or the
    message of the error it raised (a string): a script that errs keeps what it wrote before the error, so
    each job's completion is caught on its own and the jobs after it are still completed.

  A refused completion's token goes into refused-tokens, where the delivery script (takeNextJobs) finds
  it and fetches no job for that slot: bullmq fetches a next job only after a completion that succeeded.
  Entries of slots that never fetch again lapse with the set, REFUSED_TTL_MS after the last refusal.
]]
-- bullmq's includes, expanded here ahead of its script's body, call redis through this.
local rcall = redis.call
--- @function "bullmq/moveToFinished-14" moveToFinished

local REFUSED_TTL_MS = 60000
local K = tonumber(ARGV[1])
local refusedKey = KEYS[14 + K]
local results = {}
for j = 1, K do
  local keys = { KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11],
    KEYS[11 + j], KEYS[12 + K], KEYS[13 + K] }
  local a = 1 + 9 * (j - 1)
  local argv = { ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], '0', ARGV[a + 7], ARGV[a + 8], ARGV[a + 9] }
  local ok, reply = pcall(moveToFinished, keys, argv)
  if ok then results[j] = reply else results[j] = tostring(reply) end
  if not ok or (tonumber(reply) or 0) < 0 then
    rcall('SADD', refusedKey, cmsgpack.unpack(argv[8])['token'])
    rcall('PEXPIRE', refusedKey, REFUSED_TTL_MS)
  end
end
return results
