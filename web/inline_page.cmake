# Writes the one-file page: `cmake -DTEMPLATE=... -DREPORT_CSS=... -DCSS=... -DCORE=... -DD3=...
# -DREPORT_JS=... -DJS=... -DOUT=... -P inline_page.cmake`. The report's style and script
# (studies/report/, the --report page's own), D3, the module, and the page's script and style
# are pasted into the template's placeholders, so the page opens from file:// with nothing
# else beside it. Plain text substitution: the same inputs give the same bytes.
foreach(input TEMPLATE REPORT_CSS CSS CORE D3 REPORT_JS JS OUT)
  if(NOT DEFINED ${input})
    message(FATAL_ERROR "inline_page.cmake: -D${input}= is missing")
  endif()
endforeach()
file(READ "${TEMPLATE}" rest)
# The placeholders in the order the template holds them, each with its file.
set(parts REPORT_CSS CSS CORE D3 REPORT_JS JS)
set(placeholder_REPORT_CSS "@ALLOCSIM_REPORT_CSS@")
set(placeholder_CSS "@ALLOCSIM_PAGE_CSS@")
set(placeholder_CORE "@ALLOCSIM_CORE_JS@")
set(placeholder_D3 "@ALLOCSIM_D3_JS@")
set(placeholder_REPORT_JS "@ALLOCSIM_REPORT_JS@")
set(placeholder_JS "@ALLOCSIM_PAGE_JS@")
set(page "")
foreach(part IN LISTS parts)
  file(READ "${${part}}" text)
  # A script's text ends at the first "</script"; an inlined file holding one would cut the page.
  string(TOLOWER "${text}" lower)
  string(FIND "${lower}" "</script" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "inline_page.cmake: ${${part}} holds \"</script\", which would end its <script> early")
  endif()
  # Found in the template's rest only: a pasted file's text is never scanned.
  string(FIND "${rest}" "${placeholder_${part}}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "inline_page.cmake: ${TEMPLATE} has no ${placeholder_${part}} after the ones before it")
  endif()
  string(SUBSTRING "${rest}" 0 ${at} before)
  string(LENGTH "${placeholder_${part}}" length)
  math(EXPR after "${at} + ${length}")
  string(SUBSTRING "${rest}" ${after} -1 rest)
  string(APPEND page "${before}${text}")
endforeach()
file(WRITE "${OUT}" "${page}${rest}")
