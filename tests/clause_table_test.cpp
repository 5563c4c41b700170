// One source of truth: the clause table, the registered properties and the
// section headings of spec/SPEC.md section 7 name the same clauses, in the
// same order, with the same titles; every section has its five parts; and
// README counts as many.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "properties/registry.hpp"
#include "spec/clauses.hpp"

namespace attnspec {
namespace {

struct SpecSection {
  std::string heading;  // "ID: title"
  std::string body;
};

std::vector<SpecSection> clause_sections() {
  std::ifstream in(ATTNSPEC_SOURCE_DIR "/spec/SPEC.md");
  std::vector<SpecSection> sections;
  std::string line;
  bool in_clauses = false, in_rules = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) in_clauses = line.rfind("## 7.", 0) == 0;
    if (!in_clauses) continue;
    // Numbered subsections ("### 7.1 ...") are the section's general
    // rules; every other heading is a clause.
    if (line.rfind("### 7.", 0) == 0) {
      in_rules = true;
    } else if (line.rfind("### ", 0) == 0) {
      in_rules = false;
      sections.push_back({line.substr(4), ""});
    } else if (!sections.empty() && !in_rules) {
      sections.back().body += line + "\n";
    }
  }
  return sections;
}

TEST(ClauseTable, SpecSectionsMatchTheTable) {
  const std::vector<SpecSection> sections = clause_sections();
  ASSERT_EQ(sections.size(), clause_table().size());
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const Clause& c = clause_table()[i];
    EXPECT_EQ(sections[i].heading, std::string(c.id) + ": " + std::string(c.title));
    for (const char* part : {"**Statement.**", "**Rationale.**", "**Check.**", "**Tolerance.**", "**Needs.**"})
      EXPECT_NE(sections[i].body.find(part), std::string::npos) << c.id << " lacks " << part;
  }
}

TEST(ClauseTable, EveryClauseHasExactlyOneProperty) {
  std::vector<std::string> table, registered;
  for (const Clause& c : clause_table()) table.emplace_back(c.id);
  for (const RegisteredProperty& p : registered_properties()) registered.emplace_back(p.clause);
  EXPECT_EQ(table, registered);
  EXPECT_EQ(std::set<std::string>(table.begin(), table.end()).size(), table.size()) << "duplicate clause IDs";
}

// README's opening counts the clauses; a clause added to the table must
// not leave it behind.
TEST(ClauseTable, ReadmeCountsTheClausesOfTheTable) {
  std::ifstream in(ATTNSPEC_SOURCE_DIR "/README.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const std::regex count(R"((\d+) numbered\s+conformance clauses)");
  int mentions = 0;
  for (auto it = std::sregex_iterator(readme.begin(), readme.end(), count); it != std::sregex_iterator(); ++it) {
    ++mentions;
    EXPECT_EQ(std::stoul((*it)[1].str()), clause_table().size()) << "README: \"" << it->str() << "\"";
  }
  EXPECT_EQ(mentions, 1) << "README should count the clauses once, as \"N numbered conformance clauses\"";
}

TEST(ClauseTable, SkipReasonsNameTheMissingCapability) {
  Capabilities none;
  EXPECT_EQ(skip_reason(*find_clause("PREC"), none), "");
  EXPECT_NE(skip_reason(*find_clause("SOFTCAP"), none).find("softcap"), std::string::npos);
  EXPECT_NE(skip_reason(*find_clause("GQA"), none).find("GQA"), std::string::npos);
  Capabilities causal;
  causal.causal_bottom_right = true;
  EXPECT_EQ(skip_reason(*find_clause("CAUSAL"), causal), "");
}

}  // namespace
}  // namespace attnspec
