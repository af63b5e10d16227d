--[[
  The held jobs a delivery call reads (includes/takeJobsBody): ready-jobs, one queue-ordered set of the held
  jobs of classes with room ("<class>#<job id>" -> order), so that a job that can go costs the same whatever
  is held elsewhere. The call reads it from the front in chunks, one command for READ_CHUNK jobs rather than
  one a job, and removes the entries it took in one command at the end.
  Its place is the run's (run.readyChunk, readyAt, readyTaken, readyEnded, in includes/takeJobsBody's run):
  the main loop takes the head it looked at by moving readyAt on by 2 and readyTaken by 1.
  Needs rcall. Defines readyJobs: head(input, run) and removeTaken(input, run) (input: includes/takeJobsInput's
  table).
]]
local readyJobs = {}

-- Ready jobs are read in chunks from the front and removed in one go at the end: this script is the
-- only one taking from the front while it runs.
local READ_CHUNK = 64

-- The entry at the head ("<class>#<job id>") and its order, or nil when none is left.
function readyJobs.head(input, run)
  if run.readyAt > #run.readyChunk and not run.readyEnded then
    run.readyChunk = rcall('ZRANGE', input.readyJobsKey, run.readyTaken, run.readyTaken + READ_CHUNK - 1, 'WITHSCORES')
    run.readyAt = 1
    -- Nothing adds to ready-jobs while this runs: a short chunk is the last.
    run.readyEnded = #run.readyChunk < 2 * READ_CHUNK
  end
  local chunk, at = run.readyChunk, run.readyAt
  if at > #chunk then return nil end
  return chunk[at], tonumber(chunk[at + 1])
end

function readyJobs.removeTaken(input, run)
  if run.readyTaken > 0 then rcall('ZREMRANGEBYRANK', input.readyJobsKey, 0, run.readyTaken - 1) end
end
