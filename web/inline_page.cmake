# Writes the one-file page: `cmake -DTEMPLATE=... -DCORE=... -DJS=... -DCSS=... -DOUT=... -P inline_page.cmake`.
# The module, the page's script and its style are pasted into the template's placeholders, so the
# page opens from file:// with nothing else beside it. Plain text substitution: the same inputs
# give the same bytes.
foreach(input TEMPLATE CORE JS CSS OUT)
  if(NOT DEFINED ${input})
    message(FATAL_ERROR "inline_page.cmake: -D${input}= is missing")
  endif()
endforeach()
file(READ "${TEMPLATE}" page)
file(READ "${CORE}" core)
file(READ "${JS}" js)
file(READ "${CSS}" css)
# A script's text ends at the first "</script"; an inlined file holding one would cut the page.
foreach(part core js)
  string(TOLOWER "${${part}}" lower)
  string(FIND "${lower}" "</script" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "inline_page.cmake: ${part} holds \"</script\", which would end its <script> early")
  endif()
endforeach()
# Each placeholder once; replaced in this order so that a pasted file's text is never scanned.
string(REPLACE "@ALLOCSIM_PAGE_CSS@" "${css}" page "${page}")
string(FIND "${page}" "@ALLOCSIM_CORE_JS@" core_at)
string(SUBSTRING "${page}" 0 ${core_at} before)
string(LENGTH "@ALLOCSIM_CORE_JS@" placeholder)
math(EXPR after_at "${core_at} + ${placeholder}")
string(SUBSTRING "${page}" ${after_at} -1 after)
string(REPLACE "@ALLOCSIM_PAGE_JS@" "${js}" after "${after}")
file(WRITE "${OUT}" "${before}${core}${after}")
