# Writes OUTPUT, a C++ file defining report_template(), report_style() and report_script()
# from the three resource files, as raw string literals. Run at build time
# (add_custom_command), so an edit of the template rebuilds the report.
file(READ "${TEMPLATE}" template_text)
file(READ "${STYLE}" style_text)
file(READ "${SCRIPT}" script_text)
set(delimiter "allocsim_asset")  # at most 16 characters
foreach(text IN ITEMS "${template_text}" "${style_text}" "${script_text}")
  string(FIND "${text}" ")${delimiter}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "a report resource holds the raw string delimiter ${delimiter}")
  endif()
endforeach()
file(WRITE "${OUTPUT}.tmp"
  "// Generated from studies/report/ by studies/report/embed.cmake; do not edit.\n"
  "#include \"studies/report_assets.hpp\"\n\nnamespace allocsim {\n\n"
  "std::string_view report_template() {\n  return R\"${delimiter}(${template_text})${delimiter}\";\n}\n\n"
  "std::string_view report_style() {\n  return R\"${delimiter}(${style_text})${delimiter}\";\n}\n\n"
  "std::string_view report_script() {\n  return R\"${delimiter}(${script_text})${delimiter}\";\n}\n\n"
  "}  // namespace allocsim\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
