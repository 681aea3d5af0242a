# Fails when the C example in README.md differs from examples/neighbours.c,
# so the snippet a reader copies is the program CI compiles and runs.
# Usage: cmake -DREADME=... -DEXAMPLE=... -P check_readme_example.cmake
file(READ ${README} readme)
file(READ ${EXAMPLE} example)
string(FIND "${readme}" "```c\n" begin)
if(begin EQUAL -1)
  message(FATAL_ERROR "README.md has no ```c block")
endif()
math(EXPR begin "${begin} + 5")
string(SUBSTRING "${readme}" ${begin} -1 rest)
string(FIND "${rest}" "```" end)
string(SUBSTRING "${rest}" 0 ${end} snippet)
# the example file carries a comment header the README leaves out
string(FIND "${example}" "#include" code_begin)
string(SUBSTRING "${example}" ${code_begin} -1 code)
if(NOT snippet STREQUAL code)
  message(FATAL_ERROR "README.md's C example differs from examples/neighbours.c")
endif()
message(STATUS "README example matches examples/neighbours.c")
