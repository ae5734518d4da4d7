-- Authorization-code exchanges (RFC 6749 4.1.3 with PKCE): each request
-- spends the next code of its thread from $CODES_FILE (one a line; of
-- $THREADS threads, thread i takes every i-th line), with the verifier
-- $VERIFIER, the callback $REDIRECT_URI (already URL-encoded) and the
-- client's id and secret as HTTP Basic ($BASIC, already base64). A thread
-- out of codes sends "spent", answered 400 and counted as non2xx.
dofile("bench/report.lua")

dofile("bench/threads.lua")

function init(args)
  local threads = tonumber(os.getenv("THREADS"))
  codes, spent, line = {}, 0, 0
  for value in io.lines(os.getenv("CODES_FILE")) do
    if line % threads == index - 1 then codes[#codes + 1] = value end
    line = line + 1
  end
  form = "grant_type=authorization_code&redirect_uri=" .. os.getenv("REDIRECT_URI")
    .. "&code_verifier=" .. os.getenv("VERIFIER") .. "&code="
  headers = {["content-type"] = "application/x-www-form-urlencoded", ["authorization"] = "Basic " .. os.getenv("BASIC")}
end

function request()
  spent = spent + 1
  return wrk.format("POST", nil, headers, form .. (codes[spent] or "spent"))
end
