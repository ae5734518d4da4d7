-- Numbers wrk's threads 1, 2, … : each thread's script sees its own as `index`.
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("index", threads)
end
