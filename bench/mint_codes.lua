-- Authorization codes from Gatehouse's authorization endpoint, as a
-- browser signed in on the hosted pages gets them: GET the authorization
-- request ($AUTHORIZE, a path and query) with the sign-in cookie ($COOKIE);
-- each 303's code is appended to $CODES_DIR/<thread>.
dofile("bench/report.lua")

dofile("bench/threads.lua")

function init(args)
  out = io.open(os.getenv("CODES_DIR") .. "/" .. index, "a")
  wrk.headers["cookie"] = os.getenv("COOKIE")
  path = os.getenv("AUTHORIZE")
end

function request()
  return wrk.format("GET", path)
end

function response(status, headers, body)
  local location = headers["location"] or headers["Location"]
  local code = location and location:match("[?&]code=([^&]+)")
  if code then out:write(code, "\n") out:flush() end
end
