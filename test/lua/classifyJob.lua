--[[
  Test harness: classifies one job with includes/classifyInLua, as the delivery script would.
  ARGV[1] spec   ARGV[2] gen   ARGV[3] name ('' with ARGV[5] = '0': no name)   ARGV[4] data
  ARGV[5] '1' when the job has a name
  Output: the class member, or false when the job needs the TypeScript classifier.
]]
--- @include "../../lua/includes/classifyInLua"

local spec = parseClassSpec(ARGV[1])
local name = ARGV[5] == '1' and ARGV[3] or false
local buckets = classifyInLua(spec, name, ARGV[4])
return buckets and classMember(ARGV[2], buckets) or false
